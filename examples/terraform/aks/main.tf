# AKS in kemu with the azurerm provider: a resource group, a cluster with its
# default pool and an extra pool, and the kubernetes provider on kube_config.
# Not run by scripts/e2e-terraform yet: see ../README.md.
terraform {
  required_providers {
    azurerm = {
      source  = "hashicorp/azurerm"
      version = "5.2.0"
    }
    kubernetes = {
      source  = "hashicorp/kubernetes"
      version = "3.2.1"
    }
  }
}

variable "kemu_arm_host" {
  description = "kemu's AKS facade host and port (the ready line's aks, without https://)."
  type        = string
  default     = "127.0.0.1:4752"
}

variable "node_count" {
  type    = number
  default = 2
}

# The provider discovers the cloud from the metadata host, which kemu serves
# (/metadata/endpoints); kemu's CA must be trusted (SSL_CERT_FILE=ca_bundle).
provider "azurerm" {
  features {}
  metadata_host                   = var.kemu_arm_host
  environment                     = "custom"
  tenant_id                       = "00000000-0000-0000-0000-00000000a1a1"
  subscription_id                 = "00000000-0000-0000-0000-00000000b2b2"
  client_id                       = "kemu"
  client_secret                   = "kemu"
  resource_provider_registrations = "none"
}

resource "azurerm_resource_group" "main" {
  name     = "demo-rg"
  location = "westeurope"
}

resource "azurerm_kubernetes_cluster" "main" {
  name                = "demo"
  location            = azurerm_resource_group.main.location
  resource_group_name = azurerm_resource_group.main.name
  dns_prefix          = "demo"
  tags                = { team = "platform" }

  default_node_pool {
    name       = "system"
    node_count = var.node_count
    vm_size    = "Standard_D2s_v3"
  }

  identity {
    type = "SystemAssigned"
  }
}

resource "azurerm_kubernetes_cluster_node_pool" "user" {
  name                  = "user"
  kubernetes_cluster_id = azurerm_kubernetes_cluster.main.id
  vm_size               = "Standard_D4s_v3"
  node_count            = 1
  node_labels           = { pool = "user" }
}

provider "kubernetes" {
  host                   = azurerm_kubernetes_cluster.main.kube_config[0].host
  client_certificate     = base64decode(azurerm_kubernetes_cluster.main.kube_config[0].client_certificate)
  client_key             = base64decode(azurerm_kubernetes_cluster.main.kube_config[0].client_key)
  cluster_ca_certificate = base64decode(azurerm_kubernetes_cluster.main.kube_config[0].cluster_ca_certificate)
}

resource "kubernetes_namespace_v1" "apps" {
  metadata {
    name = "apps"
  }
  depends_on = [azurerm_kubernetes_cluster_node_pool.user]
}

output "host" {
  value     = azurerm_kubernetes_cluster.main.kube_config[0].host
  sensitive = true
}
