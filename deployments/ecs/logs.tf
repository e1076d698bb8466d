resource "aws_cloudwatch_log_group" "service" {
  for_each          = toset(local.service_names)
  name              = "/ecs/${var.name}/${each.key}"
  retention_in_days = var.log_retention_days
}
