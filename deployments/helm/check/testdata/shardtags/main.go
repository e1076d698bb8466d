// Command shardtags prints the chart's files/shard-tags.yaml: for each shard
// count N up to 64, the hash tags of its N shards, as pkg/queue's ShardTag
// computes them. A tag is a CRC-16 search that Helm's templates cannot do.
package main

import (
	"fmt"
	"strings"

	"github.com/tockhq/tock/pkg/queue"
)

// maxShards: 16 masters with four shards each, more than docs/operations.md
// finds useful. Beyond, worker.autoscaling.keda.streams lists the streams.
const maxShards = 64

func main() {
	fmt.Println("# The hash tags of the shards, by shard count: <prefix>:{<tag>}:ready is")
	fmt.Println("# a shard's stream. Generated from pkg/queue's ShardTag by")
	fmt.Println("# deployments/helm/check: go test -run TestShardTags -update")
	for n := 1; n <= maxShards; n++ {
		tags := make([]string, n)
		for i := range tags {
			tags[i] = queue.ShardTag(i, n)
		}
		fmt.Printf("%q: [%s]\n", fmt.Sprint(n), strings.Join(tags, ", "))
	}
}
