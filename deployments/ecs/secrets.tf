# Connection strings and tokens live in Secrets Manager and reach the tasks
# through ECS `secrets`, never as plain environment in the task definition.
# Tasks read them at start: after a change, force a new deployment.
# They are also in the Terraform state: keep it encrypted.

resource "random_password" "db" {
  length  = 40
  special = false # it goes in a URL
}

resource "random_password" "admin_token" {
  length  = 48
  special = false
}

resource "random_password" "redis_auth" {
  length  = 64
  special = false # ElastiCache refuses some specials; it goes in a URL
}

resource "aws_secretsmanager_secret" "database_url" {
  name_prefix = "${var.name}/database-url-"
  description = "TOCK_DATABASE_URL: Postgres URL with its password"
}

resource "aws_secretsmanager_secret_version" "database_url" {
  secret_id = aws_secretsmanager_secret.database_url.id
  # rds.force_ssl is on. sslmode=require encrypts without checking the server's
  # certificate: verify-full would need the RDS CA bundle in the image.
  secret_string = "postgres://${aws_db_instance.main.username}:${random_password.db.result}@${aws_db_instance.main.endpoint}/${aws_db_instance.main.db_name}?sslmode=require"
}

resource "aws_secretsmanager_secret" "redis_url" {
  name_prefix = "${var.name}/redis-url-"
  description = "TOCK_REDIS_URL: the Redis cluster's configuration endpoint, with TLS and its auth token"
}

resource "aws_secretsmanager_secret_version" "redis_url" {
  secret_id = aws_secretsmanager_secret.redis_url.id
  # The configuration endpoint seeds node discovery (TOCK_REDIS_CLUSTER=true).
  secret_string = "rediss://:${random_password.redis_auth.result}@${aws_elasticache_replication_group.main.configuration_endpoint_address}:${aws_elasticache_replication_group.main.port}"
}

resource "aws_secretsmanager_secret" "admin_token" {
  name_prefix = "${var.name}/admin-token-"
  description = "TOCK_ADMIN_TOKEN: the dashboard administrator's bearer token"
}

resource "aws_secretsmanager_secret_version" "admin_token" {
  secret_id     = aws_secretsmanager_secret.admin_token.id
  secret_string = random_password.admin_token.result
}

# The operator key that seals users' webhook signing secrets at rest
# (AES-256-GCM). Rotating it: docs/operations.md.
resource "random_bytes" "secret_key" {
  length = 32
}

resource "aws_secretsmanager_secret" "secret_key" {
  name_prefix = "${var.name}/secret-key-"
  description = "TOCK_SECRET_KEY: seals users' webhook signing secrets at rest"
}

resource "aws_secretsmanager_secret_version" "secret_key" {
  secret_id     = aws_secretsmanager_secret.secret_key.id
  secret_string = random_bytes.secret_key.base64
}
