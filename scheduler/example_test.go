package scheduler_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/restoregraph/restoregraph/scheduler"
)

// diamond: 0 → {1, 2} → 3, and a separate node 4.
type diamond struct{}

func (diamond) Len() int { return 5 }
func (diamond) Successors(n int64) []int32 {
	return [][]int32{{1, 2}, {3}, {3}, nil, nil}[n]
}
func (diamond) Predecessors(n int64) []int32 {
	return [][]int32{nil, {0}, {0}, {1, 2}, nil}[n]
}

func Example() {
	rep, err := scheduler.Run(context.Background(), diamond{}, func(ctx context.Context, n *scheduler.Node) error {
		if n.ID() == 2 {
			return errors.New("quota exceeded")
		}
		return nil
	}, scheduler.Options{Workers: 2})
	if err != nil {
		panic(err)
	}
	for id, r := range rep.All() {
		fmt.Println(id, r.Status, r.Chain)
	}
	// Output:
	// 0 Succeeded []
	// 1 Succeeded []
	// 2 Failed []
	// 3 Skipped [2 3]
	// 4 Succeeded []
}
