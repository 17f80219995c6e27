// Package bench holds the benchmarks that compare restoregraph with the alternatives,
// and (in workload) the generators of the backups they restore.
//
//	go test -run '^$' -bench . -benchtime 1x ./bench
package bench
