package mapper

// sameSlice reports whether a and b are one non-empty slice: same first
// byte, same length. A step's Raw is never modified, so a step carrying the
// same Raw slice as another (one a read reused from the previous read) holds
// the same bytes.
func sameSlice(a, b []byte) bool {
	return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0]
}
