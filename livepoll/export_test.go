package livepoll

import "context"

// Subscribe is SubscribeAfter not resuming: the tests' way in.
func (h *Hub) Subscribe(ctx context.Context, key Key, fetch FetchFunc) (*Subscription, error) {
	return h.SubscribeAfter(ctx, key, fetch, 0)
}
