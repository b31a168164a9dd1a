# EKS goes to kemu; IAM, EC2 and STS to a peer emulator beside it (moto_server).
# On AWS this block is just `provider "aws" { region = var.region }`.
variable "kemu_eks_endpoint" {
  description = "kemu's EKS facade (the ready line's eks)."
  type        = string
  default     = "http://127.0.0.1:4750"
}

variable "aws_peer_endpoint" {
  description = "The emulator that serves IAM, EC2 and STS (moto_server)."
  type        = string
  default     = "http://127.0.0.1:5000"
}

variable "region" {
  type    = string
  default = "us-east-1"
}

provider "aws" {
  region     = var.region
  access_key = "test"
  secret_key = "test"

  # No instance metadata service on a laptop or CI runner.
  skip_metadata_api_check = true

  endpoints {
    eks = var.kemu_eks_endpoint
    iam = var.aws_peer_endpoint
    ec2 = var.aws_peer_endpoint
    sts = var.aws_peer_endpoint
  }
}
