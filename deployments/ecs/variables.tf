variable "name" {
  description = "Prefix of every resource name (ALB and target group names allow it 20 characters)."
  type        = string
  default     = "tock"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,19}$", var.name))
    error_message = "name must be 1-20 lower-case letters, digits or hyphens, starting with a letter."
  }
}

variable "region" {
  description = "AWS region, e.g. eu-west-1."
  type        = string
}

variable "tags" {
  description = "Tags added to every resource."
  type        = map(string)
  default     = {}
}

# Network

variable "vpc_cidr" {
  type    = string
  default = "10.40.0.0/16"
}

variable "az_count" {
  description = "Availability zones used: a public and a private subnet in each."
  type        = number
  default     = 2

  validation {
    condition     = var.az_count >= 2 && var.az_count <= 3
    error_message = "az_count must be 2 or 3 (RDS and a multi-AZ ALB need two)."
  }
}

variable "single_nat_gateway" {
  description = "One NAT gateway for all zones: cheaper, but outbound traffic (webhooks) stops if its zone fails."
  type        = bool
  default     = false
}

variable "allowed_cidrs" {
  description = "Who may reach the dashboard's load balancer."
  type        = list(string)
  default     = ["0.0.0.0/0"]
}

variable "certificate_arn" {
  description = "ACM certificate for HTTPS on the ALB; when empty the dashboard is served over plain HTTP on port 80."
  type        = string
  default     = ""
}

# Images and services

variable "image_repository" {
  description = "Registry path holding one image per service, <image_repository>/<service>:<image_tag>, e.g. 123456789012.dkr.ecr.eu-west-1.amazonaws.com/tock."
  type        = string
}

variable "image_tag" {
  description = "Tag of the images to run (built with deployments/Dockerfile)."
  type        = string
}

variable "cpu_architecture" {
  description = "X86_64, or ARM64 for images built for linux/arm64."
  type        = string
  default     = "X86_64"
}

variable "task_sizes" {
  description = "Fargate CPU units and memory (MiB) per service task."
  type        = map(object({ cpu = number, memory = number }))
  default = {
    dashboard = { cpu = 512, memory = 1024 }
    scheduler = { cpu = 512, memory = 1024 }
    worker    = { cpu = 1024, memory = 2048 }
  }
}

variable "dashboard_count" {
  type    = number
  default = 1
}

variable "scheduler_count" {
  description = "Schedulers: all publish; one at a time leads the loader."
  type        = number
  default     = 3
}

variable "worker_count" {
  description = "Workers at deployment, and the autoscaling minimum."
  type        = number
  default     = 5

  validation {
    condition     = var.worker_count >= 1
    error_message = "worker_count must be at least 1: the scaling metric is backlog per running worker."
  }
}

variable "worker_max_count" {
  description = "Autoscaling maximum of the worker service. Mind the database: every worker opens up to 6 connections (db_max_conns)."
  type        = number
  default     = 20
}

variable "worker_backlog_per_task" {
  description = "Autoscaling target: ready-stream entries not yet acknowledged (CloudWatch StreamBacklog) per running worker."
  type        = number
  default     = 500
}

variable "worker_concurrency" {
  description = "TOCK_WORKER_CONCURRENCY: attempts in flight at once in one worker. A slot waiting on a slow target costs memory and a descriptor, not CPU."
  type        = number
  default     = 2048
}

variable "worker_shutdown_grace_seconds" {
  description = "TOCK_SHUTDOWN_GRACE: how long in-flight attempts get at shutdown. The worker's ECS stopTimeout is this plus 10 s (Fargate allows at most 120 s)."
  type        = number
  default     = 25

  validation {
    condition     = var.worker_shutdown_grace_seconds >= 1 && var.worker_shutdown_grace_seconds <= 110
    error_message = "worker_shutdown_grace_seconds must be 1-110, so that it plus the 10 s margin fits Fargate's 120 s stopTimeout."
  }
}

variable "worker_environment" {
  description = "More worker settings, e.g. TOCK_SMTP_HOST, TOCK_SMTP_FROM."
  type        = map(string)
  default     = {}
}

variable "worker_secrets" {
  description = "More worker settings from Secrets Manager: variable name => secret ARN, e.g. TOCK_SMTP_PASSWORD."
  type        = map(string)
  default     = {}
}

variable "log_level" {
  type    = string
  default = "info"
}

variable "log_retention_days" {
  type    = number
  default = 30
}

variable "metric_namespace" {
  description = "CloudWatch namespace the scheduler publishes StreamBacklog and DueSetSize to (TOCK_CLOUDWATCH_NAMESPACE)."
  type        = string
  default     = "Tock"
}

# Postgres

variable "db_instance_class" {
  type    = string
  default = "db.m7g.large"
}

variable "db_allocated_storage" {
  description = "GiB at creation; storage autoscaling grows it up to db_max_allocated_storage."
  type        = number
  default     = 50
}

variable "db_max_allocated_storage" {
  type    = number
  default = 500
}

variable "db_multi_az" {
  type    = bool
  default = true
}

variable "db_backup_retention_days" {
  type    = number
  default = 7
}

variable "db_max_conns" {
  description = "TOCK_DB_MAX_CONNS for every task; null keeps each service's own default (dashboard 8, scheduler 3, worker 6). docs/operations.md adds up the budget."
  type        = number
  default     = null
}

variable "deletion_protection" {
  description = "Protects the database from deletion; a protected database also gets a final snapshot when it is eventually deleted."
  type        = bool
  default     = true
}

# Redis

variable "redis_node_type" {
  type    = string
  default = "cache.m7g.large"
}

variable "redis_num_node_groups" {
  description = "Cluster-mode shards (node groups)."
  type        = number
  default     = 2
}

variable "redis_replicas_per_node_group" {
  type    = number
  default = 1
}

variable "redis_shards" {
  description = "TOCK_REDIS_SHARDS: hash tags (a due set and a stream each) that jobs spread over. Keep it a multiple of redis_num_node_groups: shard i's tag hashes into the i-th of N equal slot ranges, so node groups that divide N get N / groups shards each."
  type        = number
  default     = 4
}

variable "redis_prefix" {
  description = "TOCK_REDIS_PREFIX, also the Prefix dimension of the backlog metric."
  type        = string
  default     = "tock"
}
