// Package faultproxy is a TCP proxy that injects network faults between two services:
// added latency, connection resets, a black hole, responses cut in half or dropped
// after the server handled the request, and slow bodies. The fault can be switched
// while traffic flows; switching closes open connections so pooled keep-alive
// connections pick up the new fault at once.
package faultproxy

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Fault is what the proxy does to each new connection.
type Fault int

// The faults.
const (
	// Pass forwards bytes untouched.
	Pass Fault = iota
	// Latency delays every chunk in both directions by Delay.
	Latency
	// Reset accepts and resets the connection at once (RST).
	Reset
	// BlackHole accepts and reads, and never answers.
	BlackHole
	// CutResponse forwards the request, then half of the first response chunk, then resets.
	CutResponse
	// DropResponse forwards the request and lets the server answer, then resets the
	// client without a byte of the answer: the server applied it, the client cannot know.
	DropResponse
	// SlowBody forwards the response one byte per Delay.
	SlowBody
)

var names = [...]string{"pass", "latency", "reset", "black hole", "cut response", "drop response", "slow body"}

func (f Fault) String() string { return names[f] }

// Proxy forwards connections from its loopback listener to a target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	fault Fault
	delay time.Duration
	conns map[net.Conn]struct{}

	faulted atomic.Int64
	wg      sync.WaitGroup
}

// New listens on a free loopback port and forwards to target ("host:port").
func New(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's listening address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Set switches the fault (delay is used by Latency and SlowBody) and closes the open
// connections.
func (p *Proxy) Set(f Fault, delay time.Duration) {
	p.mu.Lock()
	p.fault, p.delay = f, delay
	open := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		open = append(open, c)
	}
	p.mu.Unlock()
	for _, c := range open {
		_ = c.Close()
	}
}

// Faulted counts the connections a fault other than Pass was applied to.
func (p *Proxy) Faulted() int64 { return p.faulted.Load() }

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Set(Pass, 0)
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		fault, delay := p.fault, p.delay
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		if fault != Pass {
			p.faulted.Add(1)
		}
		p.wg.Go(func() {
			defer p.forget(c)
			p.serve(c, fault, delay)
		})
	}
}

func (p *Proxy) forget(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *Proxy) serve(client net.Conn, fault Fault, delay time.Duration) {
	switch fault {
	case Reset:
		reset(client)
		return
	case BlackHole:
		_, _ = io.Copy(io.Discard, client)
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		reset(client)
		return
	}
	p.mu.Lock()
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	defer p.forget(server)

	var up sync.WaitGroup
	up.Go(func() {
		copyChunks(server, client, func([]byte) time.Duration {
			if fault == Latency {
				return delay
			}
			return 0
		})
		closeWrite(server)
	})
	p.answer(client, server, fault, delay)
	_ = client.Close()
	_ = server.Close()
	up.Wait()
}

// answer carries the server's bytes back to the client, as the fault dictates.
func (p *Proxy) answer(client, server net.Conn, fault Fault, delay time.Duration) {
	switch fault {
	case CutResponse, DropResponse:
		buf := make([]byte, 32<<10)
		n, err := server.Read(buf)
		if err != nil {
			reset(client)
			return
		}
		if fault == CutResponse {
			_, _ = client.Write(buf[:n/2])
		}
		reset(client)
	case SlowBody:
		buf := make([]byte, 1)
		for {
			if _, err := server.Read(buf); err != nil {
				return
			}
			time.Sleep(delay)
			if _, err := client.Write(buf); err != nil {
				return
			}
		}
	default:
		copyChunks(client, server, func([]byte) time.Duration {
			if fault == Latency {
				return delay
			}
			return 0
		})
	}
}

func copyChunks(dst, src net.Conn, wait func([]byte) time.Duration) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := wait(buf[:n]); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// reset closes c with an RST instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}
