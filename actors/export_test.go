package actors

import "context"

// Reconcilers is how many reconcilers s keeps (its root conversation's and
// its subagents'), and how many subagents its root's keeps a record of.
func Reconcilers(ctx context.Context, s *Session) (reconcilers, childRecords int, err error) {
	res, err := s.request(ctx, &countReconcilers{})
	if err != nil {
		return 0, 0, err
	}
	n := res.([2]int)
	return n[0], n[1], nil
}
