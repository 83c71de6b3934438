// credpoll: the credential poller's attempt loops in Go (docs/harness.md, "The credential poller").
// Linux only (the clock below); elsewhere the harness polls from Node. The Node harness
// (packages/harness/src/credpoll.ts) starts it, writes one JSON line of settings on
// stdin (the creds travel on the pipe, never in argv or a file), and reads one line per attempt.
// Each attempt is a fresh TCP connection and the NATS connect handshake: INFO, CONNECT with the
// signed nonce and PING, then PONG (admitted) or -ERR (refused). Closing stdin stops it.
//go:build linux && (amd64 || arm64)

package main

import (
	"bufio"
	"crypto/ed25519"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

type settings struct {
	Targets       []string `json:"targets"`
	JWT           string   `json:"jwt"`
	Seed          string   `json:"seed"`
	Name          string   `json:"name"`
	Concurrency   int      `json:"concurrency"`
	TimeoutMs     int      `json:"timeoutMs"`
	IntervalMs    int      `json:"intervalMs"`
	MaxAttempts   int64    `json:"maxAttempts"`
	MaxDurationMs int64    `json:"maxDurationMs"`
}

// monotonicNs reads CLOCK_MONOTONIC (id 1), the clock Node's process.hrtime uses, so both sides'
// marks compare. A failed read would misplace attempts on the timeline, so it ends the process.
func monotonicNs() int64 {
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "credpoll: clock_gettime(CLOCK_MONOTONIC):", errno)
		os.Exit(1)
	}
	return ts.Sec*1e9 + ts.Nsec
}

// seedKey decodes an nkey seed (base32: 2 prefix bytes, 32 seed bytes, CRC16) to an Ed25519 key.
func seedKey(seed string) (ed25519.PrivateKey, error) {
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(seed)
	if err != nil || len(raw) != 36 {
		return nil, errors.New("the creds' seed is not an nkey seed")
	}
	body, sum := raw[:34], uint16(raw[34])|uint16(raw[35])<<8
	if crc16(body) != sum {
		return nil, errors.New("the creds' seed fails its checksum")
	}
	return ed25519.NewKeyFromSeed(body[2:34]), nil
}

// crc16 is the XMODEM CRC nkeys append to every encoded key.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// userKey is the public nkey ("U…") for the seed's key: prefix byte 20<<3, the key, CRC16, base32.
func userKey(priv ed25519.PrivateKey) string {
	body := append([]byte{20 << 3}, priv.Public().(ed25519.PublicKey)...)
	sum := crc16(body)
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(append(body, byte(sum), byte(sum>>8)))
}

type verdict struct {
	code string // ok | auth | proto | conn | timeout
	text string
}

// attempt runs one handshake; prefix and suffix frame the CONNECT around the nonce's signature.
func attempt(target string, timeout time.Duration, key ed25519.PrivateKey, prefix, suffix []byte) verdict {
	// One deadline for the whole attempt, dial included, as handshake.ts's single timer.
	deadline := time.Now().Add(timeout)
	conn, err := (&net.Dialer{Deadline: deadline}).Dial("tcp", target)
	if err != nil {
		return failure(err)
	}
	defer conn.Close()
	conn.SetDeadline(deadline)
	r := bufio.NewReaderSize(conn, 4096)
	sent := false
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return failure(err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case !sent:
			if !strings.HasPrefix(line, "INFO ") {
				return verdict{"proto", "expected INFO, got " + strconv.Quote(truncate(line, 40))}
			}
			var info struct {
				Nonce       string `json:"nonce"`
				TLSRequired bool   `json:"tls_required"`
			}
			if err := json.Unmarshal([]byte(line[5:]), &info); err != nil {
				return verdict{"proto", "unreadable server line: " + err.Error()}
			}
			if info.TLSRequired {
				return verdict{"proto", "the server requires TLS; the handshake probe speaks plain TCP"}
			}
			sig := base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(info.Nonce)))
			msg := make([]byte, 0, len(prefix)+len(sig)+len(suffix))
			msg = append(append(append(msg, prefix...), sig...), suffix...)
			if _, err := conn.Write(msg); err != nil {
				return failure(err)
			}
			sent = true
		case line == "PONG":
			return verdict{"ok", ""}
		case strings.HasPrefix(line, "-ERR"):
			text := strings.Trim(strings.TrimSpace(line[4:]), "'")
			if strings.Contains(strings.ToLower(text), "authorization violation") {
				return verdict{"auth", text}
			}
			return verdict{"proto", text}
		case line == "PING":
			conn.Write([]byte("PONG\r\n"))
		}
	}
}

// failure names a socket error as handshake.ts does (Node's texts), so reports read alike by engine.
func failure(err error) verdict {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return verdict{"timeout", "timeout"}
	case errors.Is(err, syscall.ECONNREFUSED):
		return verdict{"conn", "connection refused"}
	case errors.Is(err, syscall.ECONNRESET):
		return verdict{"conn", "read ECONNRESET"}
	case errors.Is(err, syscall.EPIPE):
		return verdict{"conn", "write EPIPE"}
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return verdict{"conn", "connection closed before the server answered"}
	}
	return verdict{"conn", err.Error()}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 64*1024)
	line, err := in.ReadBytes('\n')
	var cfg settings
	if err == nil {
		err = json.Unmarshal(line, &cfg)
	}
	if err != nil || len(cfg.Targets) == 0 || cfg.Concurrency < 1 || cfg.TimeoutMs < 1 || cfg.IntervalMs < 0 {
		fmt.Fprintln(os.Stderr, "credpoll: the first stdin line must be its JSON settings (targets, jwt, seed, concurrency, timeoutMs, intervalMs, maxAttempts, maxDurationMs; whole numbers)")
		os.Exit(2)
	}
	key, err := seedKey(cfg.Seed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "credpoll:", err)
		os.Exit(2)
	}
	// The CONNECT line is fixed but for the signature: framed once, not re-encoded per attempt.
	head, _ := json.Marshal(map[string]any{"verbose": false, "pedantic": false, "protocol": 1, "lang": "cotal-poller", "version": "1", "name": cfg.Name, "jwt": cfg.JWT, "nkey": userKey(key)})
	prefix := append([]byte("CONNECT "), head[:len(head)-1]...)
	prefix = append(prefix, []byte(`,"sig":"`)...)
	suffix := []byte("\"}\r\nPING\r\n")

	out := bufio.NewWriterSize(os.Stdout, 64*1024)
	var outMu sync.Mutex
	var stopped atomic.Bool
	var launched atomic.Int64
	started := time.Now()
	go func() { // stdin's EOF is the stop signal
		for {
			if _, err := in.ReadByte(); err != nil {
				stopped.Store(true)
				return
			}
		}
	}()
	go func() { // flush every few ms so the parent sees attempts as they happen
		for !stopped.Load() {
			time.Sleep(5 * time.Millisecond)
			outMu.Lock()
			out.Flush()
			outMu.Unlock()
		}
	}()
	timeout := time.Duration(cfg.TimeoutMs) * time.Millisecond
	var wg sync.WaitGroup
	for i := 0; i < cfg.Concurrency; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			n := i
			buf := make([]byte, 0, 128)
			for !stopped.Load() {
				// Both budgets always apply (the harness sends both): 0 attempts means none, as in poll-loop.ts.
				if time.Since(started).Milliseconds() >= cfg.MaxDurationMs || launched.Add(1) > cfg.MaxAttempts {
					stopped.Store(true)
					return
				}
				t0 := monotonicNs()
				v := attempt(cfg.Targets[n%len(cfg.Targets)], timeout, key, prefix, suffix)
				t1 := monotonicNs()
				n++
				buf = strconv.AppendInt(buf[:0], t0, 10)
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, t1, 10)
				buf = append(buf, ' ')
				buf = append(buf, v.code...)
				if v.text != "" {
					buf = append(buf, ' ')
					buf = append(buf, v.text...)
				}
				buf = append(buf, '\n')
				outMu.Lock()
				out.Write(buf)
				outMu.Unlock()
				if cfg.IntervalMs > 0 {
					time.Sleep(time.Duration(cfg.IntervalMs) * time.Millisecond)
				}
			}
		}(i)
	}
	wg.Wait()
	stopped.Store(true)
	outMu.Lock()
	fmt.Fprintln(out, "done")
	out.Flush()
	outMu.Unlock()
}
