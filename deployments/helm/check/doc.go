// Package check holds the offline checks of tock's Helm chart.
package check
