module github.com/tockhq/tock/services/dashboard

go 1.26.8

require (
	github.com/tockhq/tock/pkg v0.0.0
	github.com/tockhq/tock/web v0.0.0
)

replace github.com/tockhq/tock/pkg => ../../pkg

replace github.com/tockhq/tock/web => ../../web
