package trigger

import (
	"errors"
	"time"
)

// ErrNotSupported is the error WatchMemory and WatchOOM wrap when the
// kernel offers no notification for the cgroup (cgroup v2 without the
// memory controller, another operating system): the caller polls Sample
// instead.
var ErrNotSupported = errors.New("not supported")

// pollInterval is how often WatchMemory reads memory.current on cgroup v2,
// which has no usage threshold the kernel would notify.
const pollInterval = 100 * time.Millisecond

// NotifyThreshold returns the cgroup usage at which WatchMemory should
// wake the caller for e, given the cgroup's memory limit: limit × 80 % for
// memory>=80%, 1 GiB for memory>=1GiB. The kernel watches the usage, page
// cache included, which is never below the working set memory counts: it
// reaches the threshold no later than the working set does, and the
// sample taken on waking decides. false for other metrics, for < and <=,
// and for a percentage without a limit.
func (e Expr) NotifyThreshold(limit uint64) (uint64, bool) {
	if e.Metric != Memory || !e.Op.rising() {
		return 0, false
	}
	if e.Unit == Bytes {
		return uint64(e.Threshold), true
	}
	if limit == 0 {
		return 0, false
	}
	return uint64(float64(limit) * e.Threshold / 100), true
}
