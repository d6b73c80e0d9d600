// Package shapes holds one function per way a value reaches the heap, for
// the escape package's tests.
package shapes

// User is a value that is returned by address.
type User struct{ Name string }

// NewUser returns the address of a local: the local moves to the heap.
func NewUser(name string) *User {
	u := User{Name: name}
	return &u
}

// Buffer returns a slice of non-constant size: its storage escapes.
func Buffer(n int) []byte {
	return make([]byte, n)
}

// Sum uses a small fixed-size slice that never leaves the function.
func Sum() int {
	s := make([]int, 8)
	t := 0
	for i := range s {
		t += i
	}
	return t
}
