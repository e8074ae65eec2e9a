package actors

import "context"

// Reconcilers is how many reconcilers s keeps: its root conversation's and
// its subagents'.
func Reconcilers(ctx context.Context, s *Session) (int, error) {
	res, err := s.request(ctx, &countReconcilers{})
	if err != nil {
		return 0, err
	}
	return res.(int), nil
}
