# Shared by run.sh and .ci/run: make sure the local Postgres and Redis answer,
# starting this machine's installed servers if they are down.

ensure_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return; fi
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting Postgres..."
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
    for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p 5432 && return; sleep 0.2; done
  fi
  echo "Postgres is not reachable on 127.0.0.1:5432 and could not be started." >&2
  echo "Install it with: apt-get install postgresql (trust auth for 127.0.0.1), or set TOCK_DATABASE_URL." >&2
  exit 1
}

ensure_redis() {
  if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then return; fi
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting Redis..."
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir "${REDIS_DIR:-/var/lib/redis}" --logfile "${REDIS_LOG:-/var/log/redis/ci.log}"
    for _ in $(seq 1 50); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return; sleep 0.2; done
  fi
  echo "Redis is not reachable on 127.0.0.1:6379 and could not be started." >&2
  echo "Install it with: apt-get install redis-server, or set TOCK_REDIS_URL." >&2
  exit 1
}

# ensure_brokers starts this machine's NATS (JetStream on) and RabbitMQ when
# they are installed and down: the nats and amqp job types' tests use them.
# A machine without them skips those tests outside CI.
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

ensure_brokers() {
  if ! port_open 4222 && [ -x /usr/sbin/nats-server ]; then
    echo "starting NATS..."
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- \
      -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    for _ in $(seq 1 50); do port_open 4222 && break; sleep 0.2; done
  fi
  if ! port_open 5672 && command -v rabbitmq-server >/dev/null 2>&1; then
    echo "starting RabbitMQ..."
    rabbitmq-server -detached
    for _ in $(seq 1 150); do port_open 5672 && break; sleep 0.2; done
  fi
}

wait_ready() { # url name logfile
  for _ in $(seq 1 150); do
    if curl -fsS "$1" >/dev/null 2>&1; then return; fi
    sleep 0.2
  done
  echo "$2 did not become ready; last log lines:" >&2
  tail -20 "$3" >&2
  exit 1
}
