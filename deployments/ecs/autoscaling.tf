# Workers scale on the ready streams' backlog per running worker: the
# scheduler's loader leader puts StreamBacklog (entries not yet acknowledged,
# over all shards) to CloudWatch every 10 s; Container Insights counts the
# running workers. Target tracking keeps backlog / workers near the target,
# between worker_count and worker_max_count.

resource "aws_appautoscaling_target" "worker" {
  service_namespace  = "ecs"
  scalable_dimension = "ecs:service:DesiredCount"
  resource_id        = "service/${aws_ecs_cluster.main.name}/${aws_ecs_service.worker.name}"
  min_capacity       = var.worker_count
  max_capacity       = var.worker_max_count
}

resource "aws_appautoscaling_policy" "worker_backlog" {
  name               = "${var.name}-worker-backlog-per-task"
  policy_type        = "TargetTrackingScaling"
  service_namespace  = aws_appautoscaling_target.worker.service_namespace
  scalable_dimension = aws_appautoscaling_target.worker.scalable_dimension
  resource_id        = aws_appautoscaling_target.worker.resource_id

  target_tracking_scaling_policy_configuration {
    target_value       = var.worker_backlog_per_task
    scale_out_cooldown = 60
    # Slow to scale in: a stopping worker gets its grace period, and bursts recur.
    scale_in_cooldown = 300

    customized_metric_specification {
      metrics {
        id          = "backlog"
        return_data = false
        metric_stat {
          stat = "Average"
          metric {
            namespace   = var.metric_namespace
            metric_name = "StreamBacklog"
            dimensions {
              name  = "Prefix"
              value = var.redis_prefix
            }
          }
        }
      }

      metrics {
        id          = "workers"
        return_data = false
        metric_stat {
          stat = "Average"
          metric {
            namespace   = "ECS/ContainerInsights"
            metric_name = "RunningTaskCount"
            dimensions {
              name  = "ClusterName"
              value = aws_ecs_cluster.main.name
            }
            dimensions {
              name  = "ServiceName"
              value = aws_ecs_service.worker.name
            }
          }
        }
      }

      metrics {
        id          = "backlog_per_worker"
        label       = "StreamBacklog per running worker"
        expression  = "backlog / workers"
        return_data = true
      }
    }
  }
}
