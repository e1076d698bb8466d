output "dashboard_url" {
  value = "${local.https ? "https" : "http"}://${aws_lb.dashboard.dns_name}"
}

output "alb_dns_name" {
  description = "Point the dashboard's DNS name here (CNAME or alias)."
  value       = aws_lb.dashboard.dns_name
}

output "admin_token_secret_arn" {
  description = "aws secretsmanager get-secret-value --secret-id <this> --query SecretString --output text"
  value       = aws_secretsmanager_secret.admin_token.arn
}

output "cluster_name" {
  value = aws_ecs_cluster.main.name
}

output "database_endpoint" {
  value = aws_db_instance.main.endpoint
}

output "redis_configuration_endpoint" {
  value = aws_elasticache_replication_group.main.configuration_endpoint_address
}

output "log_groups" {
  value = { for k, g in aws_cloudwatch_log_group.service : k => g.name }
}

output "worker_stop_timeout_seconds" {
  description = "The worker's ECS stopTimeout: TOCK_SHUTDOWN_GRACE plus the margin."
  value       = local.services.worker.stop_timeout
}
