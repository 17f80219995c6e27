// Package peers measures restoregraph's scheduler beside other DAG walkers written in
// Go — Terraform's dag.Walker and heimdalr/dag's DescendantsFlow — on the same DAGs,
// with a node function that does nothing: what remains is each walker's own cost per
// node. It is a Go module of its own so that the library's go.mod never requires them.
//
//	go test -run '^$' -bench Overhead -benchtime 3x .
package peers
