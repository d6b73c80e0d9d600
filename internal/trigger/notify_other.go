//go:build !linux

package trigger

import (
	"context"
	"fmt"
	"runtime"

	"github.com/heapscope/heapscope/internal/sysmem"
)

// WatchMemory would report crossings of a cgroup's memory usage; cgroups
// are Linux's, so elsewhere the error wraps ErrNotSupported and the
// caller polls.
func WatchMemory(ctx context.Context, cg sysmem.Cgroup, threshold uint64) (<-chan struct{}, error) {
	return nil, fmt.Errorf("watch memory of cgroup %s: cgroups on %s: %w", cg.Dir, runtime.GOOS, ErrNotSupported)
}

// WatchOOM would report the OOM killer acting in a cgroup; cgroups are
// Linux's, so elsewhere the error wraps ErrNotSupported.
func WatchOOM(ctx context.Context, cg sysmem.Cgroup) (<-chan struct{}, error) {
	return nil, fmt.Errorf("watch OOM kills of cgroup %s: cgroups on %s: %w", cg.Dir, runtime.GOOS, ErrNotSupported)
}
