package shared

import "time"

// SetCommitTimeout shortens a store's commit deadline (tests of a
// stalled upload).
func SetCommitTimeout(s *Store, d time.Duration) { s.commitTimeout = d }
