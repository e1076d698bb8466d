package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a local Redis Cluster of masters only, each a private
// redis-server process on a loopback port, as ElastiCache's cluster mode is
// to tock: hash slots spread over several masters.
type RedisCluster struct {
	Nodes []*Redis
}

// StartRedisCluster starts masters redis-server processes in cluster mode and
// joins them with redis-cli --cluster create, which spreads the 16,384 hash
// slots evenly over them. It returns once every node reports the cluster ok.
func StartRedisCluster(ctx context.Context, masters int) (*RedisCluster, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("%w: redis-server is not installed (apt-get install redis-server)", ErrUnavailable)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, fmt.Errorf("%w: redis-cli is not installed (apt-get install redis-tools)", ErrUnavailable)
	}
	rc := &RedisCluster{}
	var addrs []string
	for range masters {
		dir, err := os.MkdirTemp("", "tock-redis-cluster-")
		if err != nil {
			rc.Close()
			return nil, err
		}
		addr, err := freeClusterAddr()
		if err != nil {
			os.RemoveAll(dir)
			rc.Close()
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		r := &Redis{bin: bin, dir: dir, args: []string{"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--cluster-node-timeout", "5000"}}
		r.Port, _ = strconv.Atoi(port)
		rc.Nodes = append(rc.Nodes, r)
		if err := r.Start(ctx); err != nil {
			rc.Close()
			return nil, err
		}
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		rc.Close()
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, r := range rc.Nodes {
		for {
			info, err := r.client().ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				rc.Close()
				return nil, fmt.Errorf("redis cluster node %d not ok: %v\n%s", r.Port, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return rc, nil
}

// freeClusterAddr is a free loopback port for a cluster node whose bus port,
// 10,000 higher, is free too and below 65,536: the kernel's ephemeral range
// reaches 60,999, and redis-server refuses a port whose bus port overflows.
func freeClusterAddr() (string, error) {
	for range 200 {
		addr, err := FreeAddr()
		if err != nil {
			return "", err
		}
		_, p, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(p)
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		_ = bus.Close()
		return addr, nil
	}
	return "", errors.New("no free port pair for a redis cluster node")
}

// URL is a redis:// URL of one node; with TOCK_REDIS_CLUSTER=true the
// services discover the others from it.
func (rc *RedisCluster) URL() string { return rc.Nodes[0].URL() }

// Client returns a cluster client of the whole cluster.
func (rc *RedisCluster) Client() *redis.ClusterClient {
	addrs := make([]string, len(rc.Nodes))
	for i, r := range rc.Nodes {
		addrs[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port))
	}
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
}

// Keys returns, per node, the keys under prefix that node holds.
func (rc *RedisCluster) Keys(ctx context.Context, prefix string) ([][]string, error) {
	out := make([][]string, len(rc.Nodes))
	for i, r := range rc.Nodes {
		c := r.client()
		keys, err := c.Keys(ctx, prefix+":*").Result()
		_ = c.Close()
		if err != nil {
			return nil, err
		}
		out[i] = keys
	}
	return out, nil
}

// FlushAll empties every node, as a cluster that lost its data.
func (rc *RedisCluster) FlushAll(ctx context.Context) error {
	var errs []error
	for _, r := range rc.Nodes {
		c := r.client()
		errs = append(errs, c.FlushAll(ctx).Err())
		_ = c.Close()
	}
	return errors.Join(errs...)
}

// Close kills every node and removes their directories.
func (rc *RedisCluster) Close() {
	for _, r := range rc.Nodes {
		r.Close()
	}
}

// client is a plain client of one node.
func (r *Redis) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port))})
}
