//go:build !linux

package load

import "sync"

// closedLoops runs the closed model on event loops where there are; here,
// there are none.
func (r *runner) closedLoops(*sync.WaitGroup, []*worker) bool { return false }
