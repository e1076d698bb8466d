// The generator of the chart's files/shard-tags.yaml, built in a workspace
// with the repository's pkg module (see TestShardTags): the tags come from
// pkg/queue itself, without this check module requiring pkg and its
// dependencies.
module shardtags

go 1.26.8
