module github.com/tockhq/tock/scripts

go 1.26.8
