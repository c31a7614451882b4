package pgdb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/uptrace/bun"
)

// MaxPool is the largest pool a configuration may ask for, before any server is
// asked: every connection is a server process, and a pool in the thousands is a
// typo, not a plan.
const MaxPool = 1000

// MaxConnections returns the server's max_connections: a pool larger than that can
// never fill, and its requests would queue for slots that do not exist.
func MaxConnections(ctx context.Context, db bun.IDB) (int, error) {
	var setting string
	if err := db.NewRaw("SHOW max_connections").Scan(ctx, &setting); err != nil {
		return 0, fmt.Errorf("show max_connections: %w", err)
	}
	n, err := strconv.Atoi(setting)
	if err != nil {
		return 0, fmt.Errorf("show max_connections: %q is not a number", setting)
	}
	return n, nil
}
