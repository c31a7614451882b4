package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// dbPrefix names every database the benchmark creates; nothing else is dropped.
const dbPrefix = "handoff_bench_"

// cluster creates the benchmark's databases on one PostgreSQL server and drops them
// again.
type cluster struct {
	admin string // URL of a database to run CREATE/DROP DATABASE from
	made  []string
}

// create makes a fresh, empty database handoff_bench_<label> (dropping a leftover of
// an interrupted run) and returns its URL.
func (c *cluster) create(ctx context.Context, label string) (string, error) {
	name := dbPrefix + label
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		return "", fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return "", fmt.Errorf("drop %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	c.made = append(c.made, name)
	return c.url(name)
}

// url is the admin URL with its database replaced by name.
func (c *cluster) url(name string) (string, error) {
	u, err := url.Parse(c.admin)
	if err != nil {
		return "", fmt.Errorf("parse the admin URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// dropAll drops every database create made, even after ctx ended.
func (c *cluster) dropAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, c.admin)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	var errs []error
	for _, name := range c.made {
		if !strings.HasPrefix(name, dbPrefix) {
			continue
		}
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			errs = append(errs, fmt.Errorf("drop %s: %w", name, err))
		}
	}
	c.made = nil
	return errors.Join(errs...)
}

// openPool connects a small pool for the benchmark's own queries or load; tune, if
// any, adjusts its configuration first.
func openPool(ctx context.Context, dbURL string, size int, tune ...func(*pgxpool.Config)) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	cfg.MaxConns = int32(size)
	for _, f := range tune {
		f(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping: %w", err)
	}
	return pool, nil
}

// dbNow is the server's clock: every timestamp the benchmark compares comes from it.
func dbNow(ctx context.Context, db *pgxpool.Pool) (time.Time, error) {
	var t time.Time
	if err := db.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read the database clock: %w", err)
	}
	return t, nil
}
