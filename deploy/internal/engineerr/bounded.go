package engineerr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/driftless-dev/driftless/drift"
)

// Bounded calls f with a deadline of limit on top of ctx. When that
// deadline, not ctx, ended the call, the error is the engine at host()
// not answering op (drift.ErrEngineUnreachable): the loop retries soon,
// and the status names the request the engine left unanswered.
func Bounded[T any](ctx context.Context, limit time.Duration, host func() string, op string, f func(context.Context) (T, error)) (T, error) {
	bctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := f(bctx)
	if err != nil && ctx.Err() == nil && errors.Is(bctx.Err(), context.DeadlineExceeded) {
		return res, fmt.Errorf("%w at %s: no answer to %s within %s", drift.ErrEngineUnreachable, host(), op, limit)
	}
	return res, err
}
