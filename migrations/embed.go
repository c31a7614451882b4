// Package migrations embeds the golang-migrate SQL of every handoff service, so each
// binary carries its own schema and applies it on start.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed finance/*.sql logistics/*.sql
var all embed.FS

// Finance is the migration set of the finance database.
func Finance() fs.FS { return sub("finance") }

// Logistics is the migration set of the logistics database.
func Logistics() fs.FS { return sub("logistics") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(all, dir)
	if err != nil {
		panic(err) // the directory is embedded at build time; absence is a build bug
	}
	return f
}
