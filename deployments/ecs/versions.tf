terraform {
  required_version = ">= 1.5"

  required_providers {
    aws = {
      source = "hashicorp/aws"
      # 5.59 added aws_elasticache_replication_group.cluster_mode.
      version = "~> 5.60"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
  }

  # State holds the generated passwords and tokens: keep it in an encrypted
  # remote backend, e.g. add `backend "s3" {}` and pass -backend-config to init.
}

provider "aws" {
  region = var.region

  default_tags {
    tags = merge({ Project = var.name }, var.tags)
  }
}
