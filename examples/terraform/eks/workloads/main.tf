# A Deployment and a helm release in the cluster the parent module created,
# through the endpoint and CA terraform read from aws_eks_cluster, as a user
# wires the kubernetes and helm providers on AWS. Apply it after the parent:
#   terraform apply -var endpoint=$(terraform -chdir=.. output -raw endpoint) \
#     -var certificate_authority=$(terraform -chdir=.. output -raw certificate_authority)
# Not run by scripts/e2e-terraform yet: see ../../README.md.
terraform {
  required_providers {
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "3.2.1"
    }
    helm = {
      source  = "hashicorp/helm"
      version = "3.1.2"
    }
  }
}

variable "cluster_name" {
  type    = string
  default = "demo"
}

variable "endpoint" {
  type = string
}

variable "certificate_authority" {
  description = "The cluster's CA, base64 as aws_eks_cluster returns it."
  type        = string
}

provider "kubernetes" {
  host                   = var.endpoint
  cluster_ca_certificate = base64decode(var.certificate_authority)
  exec {
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = "aws"
    args        = ["eks", "get-token", "--cluster-name", var.cluster_name]
  }
}

provider "helm" {
  kubernetes = {
    host                   = var.endpoint
    cluster_ca_certificate = base64decode(var.certificate_authority)
    exec = {
      api_version = "client.authentication.k8s.io/v1beta1"
      command     = "aws"
      args        = ["eks", "get-token", "--cluster-name", var.cluster_name]
    }
  }
}

resource "kubernetes_deployment_v1" "web" {
  metadata {
    name = "web"
  }
  spec {
    replicas = 2
    selector {
      match_labels = { app = "web" }
    }
    template {
      metadata {
        labels = { app = "web" }
      }
      spec {
        container {
          name  = "web"
          image = "nginx:1.27"
        }
      }
    }
  }
}

resource "helm_release" "hello" {
  name  = "hello"
  chart = "${path.module}/chart"
  wait  = true
}
