module github.com/tockhq/tock/scripts

go 1.26.8

require github.com/tockhq/tock/pkg v0.0.0

replace github.com/tockhq/tock/pkg => ../pkg
