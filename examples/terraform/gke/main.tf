# GKE in kemu with the google provider: a cluster without its default pool and
# one node pool, and the kubernetes provider on the cluster's endpoint and CA.
# Not run by scripts/e2e-terraform yet: see ../README.md.
terraform {
  required_providers {
    google = {
      source  = "hashicorp/google"
      version = "7.45.0"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "3.2.1"
    }
  }
}

variable "kemu_gke_endpoint" {
  description = "kemu's GKE facade (the ready line's gke), ending in /."
  type        = string
  default     = "http://127.0.0.1:4751/"
}

variable "project" {
  type    = string
  default = "kemu-project"
}

variable "location" {
  type    = string
  default = "us-central1"
}

variable "node_count" {
  type    = number
  default = 2
}

provider "google" {
  project      = var.project
  region       = var.location
  access_token = "kemu" # any string: kemu takes it as the project owner

  container_custom_endpoint = var.kemu_gke_endpoint
  # A pool's node_count is read from compute's instance group managers.
  compute_custom_endpoint = "${var.kemu_gke_endpoint}compute/v1/"
}

resource "google_container_cluster" "main" {
  name                     = "demo"
  location                 = var.location
  remove_default_node_pool = true
  initial_node_count       = 1
  deletion_protection      = false
  resource_labels          = { team = "platform" }
}

resource "google_container_node_pool" "main" {
  name       = "main"
  cluster    = google_container_cluster.main.id
  location   = var.location
  node_count = var.node_count

  node_config {
    machine_type = "e2-standard-4"
    labels       = { pool = "main" }
  }
}

data "google_client_config" "current" {}

provider "kubernetes" {
  host                   = "https://${google_container_cluster.main.endpoint}"
  token                  = data.google_client_config.current.access_token
  cluster_ca_certificate = base64decode(google_container_cluster.main.master_auth[0].cluster_ca_certificate)
}

resource "kubernetes_namespace_v1" "apps" {
  metadata {
    name = "apps"
  }
  depends_on = [google_container_node_pool.main]
}

output "endpoint" {
  value = google_container_cluster.main.endpoint
}
