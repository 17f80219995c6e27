package main

import (
	"context"
	"io"

	"github.com/goccy/go-graphviz"
)

// renderSVG lays out the DOT graph dot with Graphviz's dot and writes it as SVG to w.
// Graphviz runs in this process, compiled to WebAssembly (go-graphviz, on wazero): no
// Graphviz installed, no cgo.
func renderSVG(ctx context.Context, dot []byte, w io.Writer) error {
	g, err := graphviz.New(ctx)
	if err != nil {
		return err
	}
	defer g.Close()
	graph, err := graphviz.ParseBytes(dot)
	if err != nil {
		return err
	}
	defer graph.Close()
	return g.Render(ctx, graph, graphviz.SVG, w)
}
