# The three services on Fargate, in private subnets. Settings are the
# environment variables of README's Configuration table; connection strings
# and tokens come from Secrets Manager (secrets.tf).

locals {
  service_names = ["dashboard", "scheduler", "worker"]

  # After its grace period, the worker records and acknowledges what finished
  # and closes its pools before ECS's SIGKILL.
  worker_stop_margin = 10

  common_env = merge({
    TOCK_REDIS_PREFIX  = var.redis_prefix
    TOCK_REDIS_CLUSTER = "true"
    TOCK_REDIS_SHARDS  = tostring(var.redis_shards)
    TOCK_LOG_LEVEL     = var.log_level
  }, var.db_max_conns == null ? {} : { TOCK_DB_MAX_CONNS = tostring(var.db_max_conns) })

  common_secrets = {
    TOCK_DATABASE_URL = aws_secretsmanager_secret.database_url.arn
    TOCK_REDIS_URL    = aws_secretsmanager_secret.redis_url.arn
    TOCK_SECRET_KEY   = aws_secretsmanager_secret.secret_key.arn
  }

  services = {
    dashboard = {
      count        = var.dashboard_count
      port         = 8080
      stop_timeout = 30 # it drains requests for 10 s after SIGTERM
      task_role    = null
      env = {
        TOCK_HTTP_ADDR    = "0.0.0.0:8080"
        TOCK_METRICS_ADDR = "0.0.0.0:9090"
        # The ALB's X-Forwarded-For names the client, for the limit on
        # failed authentication; without it every client is the ALB.
        TOCK_TRUSTED_PROXIES = var.vpc_cidr
      }
      secrets = { TOCK_ADMIN_TOKEN = aws_secretsmanager_secret.admin_token.arn }
    }
    scheduler = {
      count        = var.scheduler_count
      port         = null
      stop_timeout = 30
      task_role    = aws_iam_role.scheduler.arn
      env = {
        TOCK_METRICS_ADDR         = "0.0.0.0:9091"
        TOCK_CLOUDWATCH_NAMESPACE = var.metric_namespace
        AWS_REGION                = var.region
      }
      secrets = {}
    }
    worker = {
      count        = var.worker_count
      port         = null
      stop_timeout = var.worker_shutdown_grace_seconds + local.worker_stop_margin
      task_role    = null
      env = merge(var.worker_environment, {
        TOCK_METRICS_ADDR       = "0.0.0.0:9092"
        TOCK_SHUTDOWN_GRACE     = "${var.worker_shutdown_grace_seconds}s"
        TOCK_WORKER_CONCURRENCY = tostring(var.worker_concurrency)
      })
      secrets = var.worker_secrets
    }
  }
}

resource "aws_ecs_cluster" "main" {
  name = var.name

  # Also publishes RunningTaskCount, which worker autoscaling divides by.
  setting {
    name  = "containerInsights"
    value = "enabled"
  }
}

resource "aws_ecs_task_definition" "service" {
  for_each = local.services

  family                   = "${var.name}-${each.key}"
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.task_sizes[each.key].cpu
  memory                   = var.task_sizes[each.key].memory
  execution_role_arn       = aws_iam_role.execution.arn
  task_role_arn            = each.value.task_role

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  container_definitions = jsonencode([{
    name                   = each.key
    image                  = "${var.image_repository}/${each.key}:${var.image_tag}"
    essential              = true
    user                   = "65532:65532"
    readonlyRootFilesystem = true
    stopTimeout            = each.value.stop_timeout
    portMappings           = each.value.port == null ? [] : [{ containerPort = each.value.port, protocol = "tcp" }]

    environment = [
      for k, v in merge(local.common_env, each.value.env, {
        # The Go runtime collects harder near the task's memory rather than being OOM-killed.
        GOMEMLIMIT = "${floor(var.task_sizes[each.key].memory * 0.9)}MiB"
      }) : { name = k, value = v }
    ]
    secrets = [
      for k, v in merge(local.common_secrets, each.value.secrets) : { name = k, valueFrom = v }
    ]

    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.service[each.key].name
        awslogs-region        = var.region
        awslogs-stream-prefix = each.key
        mode                  = "non-blocking"
        max-buffer-size       = "25m"
      }
    }
  }])
}

# The dashboard and the schedulers keep the counts given here.
resource "aws_ecs_service" "service" {
  for_each = { for k, v in local.services : k => v if k != "worker" }

  name                    = each.key
  cluster                 = aws_ecs_cluster.main.id
  task_definition         = aws_ecs_task_definition.service[each.key].arn
  desired_count           = each.value.count
  launch_type             = "FARGATE"
  enable_ecs_managed_tags = true
  propagate_tags          = "SERVICE"

  health_check_grace_period_seconds = each.key == "dashboard" ? 60 : null

  network_configuration {
    subnets          = aws_subnet.private[*].id
    security_groups  = concat([aws_security_group.tasks.id], each.key == "dashboard" ? [aws_security_group.dashboard.id] : [])
    assign_public_ip = false
  }

  dynamic "load_balancer" {
    for_each = each.key == "dashboard" ? [1] : []
    content {
      target_group_arn = aws_lb_target_group.dashboard.arn
      container_name   = "dashboard"
      container_port   = 8080
    }
  }

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  depends_on = [aws_lb_listener.http]
}

# The workers' count belongs to autoscaling.tf after creation.
resource "aws_ecs_service" "worker" {
  name                    = "worker"
  cluster                 = aws_ecs_cluster.main.id
  task_definition         = aws_ecs_task_definition.service["worker"].arn
  desired_count           = var.worker_count
  launch_type             = "FARGATE"
  enable_ecs_managed_tags = true
  propagate_tags          = "SERVICE"

  network_configuration {
    subnets          = aws_subnet.private[*].id
    security_groups  = [aws_security_group.tasks.id]
    assign_public_ip = false
  }

  deployment_circuit_breaker {
    enable   = true
    rollback = true
  }

  lifecycle {
    ignore_changes = [desired_count]
  }
}
