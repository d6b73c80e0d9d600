package shared

import "time"

// SetCommitTimeout shortens a store's commit deadline (tests of a
// stalled upload).
func SetCommitTimeout(s *Store, d time.Duration) { s.commitTimeout = d }

// SetCacheGrace sets how long after it is read a run is safe from the
// eviction of s's cache.
func SetCacheGrace(s *Store, d time.Duration) { s.cache.grace = d }

// DropUnindexed is dropUnindexed, for the tests of a commit whose index
// transaction's outcome is unknown.
func DropUnindexed(s *Store, path string) (stored bool, err error) { return s.dropUnindexed(path) }
