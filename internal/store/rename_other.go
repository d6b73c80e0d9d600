//go:build !linux

package store

// renameNoReplace renames src to dst unless dst exists (fs.ErrExist).
func renameNoReplace(src, dst string) error { return renameChecked(src, dst) }
