package shared

import "time"

// SetCacheGrace sets how long after it is read a run is safe from the
// eviction of s's cache.
func SetCacheGrace(s *Store, d time.Duration) { s.cache.grace = d }
