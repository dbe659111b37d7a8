//! The I/O layer alone: one thread serving memcached text `get`/`set` with no storage, over
//! epoll (mio, edge-triggered, as fridge's workers) or over io_uring (multishot accept,
//! multishot receive into a ring of provided buffers, one send per connection per turn, every
//! turn's submissions and completions in one `io_uring_enter`). Each `get` is answered with a
//! 32-byte value, each `set` with `STORED`, so a request costs its system calls, the kernel's
//! TCP work and a line parse: what is left is what a backend could save a server. Measured by
//! `bench/io_loop` beside fridge itself; the decision it informs is in `docs/design.md`
//! ("System calls: epoll or io_uring").
//!
//! Usage: `io_loop epoll|uring PORT`
//!
//! The io_uring half hands the kernel raw pointers (buffers it writes to or sends from while
//! an operation is in flight), so it needs `unsafe`; each block says which buffer stays alive
//! and unmoved until its completion. The server itself has none.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, RawFd};

/// The value every `get` returns.
const VALUE: &[u8; 32] = b"0123456789abcdef0123456789abcdef";

/// Answers the complete requests at the front of `input` into `out`; returns the bytes used.
fn serve(input: &[u8], out: &mut Vec<u8>) -> usize {
    let mut used = 0;
    while let Some(end) = input[used..].windows(2).position(|w| w == b"\r\n") {
        let line = &input[used..used + end];
        let mut words = line.split(|&b| b == b' ');
        match words.next() {
            Some(b"get") => {
                let key = words.next().unwrap_or_default();
                out.extend_from_slice(b"VALUE ");
                out.extend_from_slice(key);
                out.extend_from_slice(b" 0 32\r\n");
                out.extend_from_slice(VALUE);
                out.extend_from_slice(b"\r\nEND\r\n");
                used += end + 2;
            }
            Some(b"set") => {
                let len: usize = words
                    .nth(3)
                    .and_then(|w| std::str::from_utf8(w).ok())
                    .and_then(|w| w.parse().ok())
                    .unwrap_or(0);
                let whole = end + 2 + len + 2;
                if input.len() - used < whole {
                    break; // the data block is still coming
                }
                out.extend_from_slice(b"STORED\r\n");
                used += whole;
            }
            _ => {
                out.extend_from_slice(b"ERROR\r\n");
                used += end + 2;
            }
        }
    }
    used
}

fn main() -> io::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(backend), Some(port)) = (args.get(1), args.get(2).and_then(|p| p.parse().ok()))
    else {
        eprintln!("usage: io_loop epoll|uring PORT");
        std::process::exit(2);
    };
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    match backend.as_str() {
        "epoll" => epoll::run(listener),
        "uring" => uring::run(listener),
        _ => {
            eprintln!("backend: epoll or uring");
            std::process::exit(2);
        }
    }
}

mod epoll {
    use super::*;
    use mio::net::{TcpListener, TcpStream};
    use mio::{Events, Interest, Poll, Token};

    struct Conn {
        stream: TcpStream,
        input: Vec<u8>,
        len: usize,
        out: Vec<u8>,
        sent: usize,
    }

    const LISTENER: Token = Token(usize::MAX);

    pub fn run(listener: std::net::TcpListener) -> io::Result<()> {
        listener.set_nonblocking(true)?;
        let mut listener = TcpListener::from_std(listener);
        let mut poll = Poll::new()?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
        let mut events = Events::with_capacity(1024);
        let mut conns: HashMap<usize, Conn> = HashMap::new();
        let mut next = 0;
        loop {
            match poll.poll(&mut events, None) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            }
            for event in &events {
                if event.token() == LISTENER {
                    while let Ok((mut stream, _)) = listener.accept() {
                        stream.set_nodelay(true)?;
                        poll.registry().register(
                            &mut stream,
                            Token(next),
                            Interest::READABLE | Interest::WRITABLE,
                        )?;
                        let conn = Conn {
                            stream,
                            input: vec![0; 64 << 10],
                            len: 0,
                            out: Vec::new(),
                            sent: 0,
                        };
                        conns.insert(next, conn);
                        next += 1;
                    }
                    continue;
                }
                let t = event.token().0;
                let Some(c) = conns.get_mut(&t) else { continue };
                if step(c).is_err() {
                    conns.remove(&t);
                }
            }
        }
    }

    /// Reads what is there, answers it, writes what the socket takes (as fridge's step: a
    /// short read ends the reading).
    fn step(c: &mut Conn) -> io::Result<()> {
        loop {
            if c.len == c.input.len() {
                c.input.resize(c.input.len() * 2, 0);
            }
            match c.stream.read(&mut c.input[c.len..]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    let room = c.input.len() - c.len;
                    c.len += n;
                    if n < room {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let used = serve(&c.input[..c.len], &mut c.out);
        c.input.copy_within(used..c.len, 0);
        c.len -= used;
        while c.sent < c.out.len() {
            match c.stream.write(&c.out[c.sent..]) {
                Ok(n) => c.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if c.sent == c.out.len() {
            c.out.clear();
            c.sent = 0;
        }
        Ok(())
    }
}

mod uring {
    use super::*;
    use io_uring::types::{BufRingEntry, Fd};
    use io_uring::{IoUring, cqueue, opcode};
    use std::alloc::{Layout, alloc_zeroed};
    use std::sync::atomic::{AtomicU16, Ordering};

    /// Provided receive buffers: how many, and the size of each.
    const BUFFERS: u16 = 1024;
    const BUF_LEN: usize = 16 << 10;
    const GROUP: u16 = 0;

    const ACCEPT: u64 = u64::MAX;
    const RECV: u64 = 0;
    const SEND: u64 = 1;

    struct Conn {
        fd: RawFd,
        /// Input left over from earlier receives (an incomplete request).
        input: Vec<u8>,
        /// Replies not yet handed to the kernel.
        out: Vec<u8>,
        /// Replies handed to the kernel by the send in flight (`sent` of them done).
        sending: Vec<u8>,
        sent: usize,
        in_flight: bool,
        /// A multishot receive is armed.
        receiving: bool,
        closed: bool,
    }

    /// The ring of provided buffers the kernel receives into.
    struct BufRing {
        entries: *mut BufRingEntry,
        memory: Vec<u8>,
        tail: u16,
    }

    impl BufRing {
        fn new(ring: &IoUring) -> io::Result<BufRing> {
            let layout = Layout::from_size_align(usize::from(BUFFERS) * 16, 4096).unwrap();
            // SAFETY: the layout has a non-zero size. The allocation is never freed: the
            // kernel reads the ring for the life of the process.
            let entries = unsafe { alloc_zeroed(layout) } as *mut BufRingEntry;
            // SAFETY: `entries` is page-aligned memory for `BUFFERS` entries, registered once,
            // and lives as long as the process (see above).
            unsafe {
                ring.submitter().register_buf_ring_with_flags(entries as u64, BUFFERS, GROUP, 0)?
            };
            let mut r =
                BufRing { entries, memory: vec![0; usize::from(BUFFERS) * BUF_LEN], tail: 0 };
            for bid in 0..BUFFERS {
                r.give_back(bid);
            }
            Ok(r)
        }

        /// The bytes the kernel received into buffer `bid`.
        fn bytes(&self, bid: u16, len: usize) -> &[u8] {
            let at = usize::from(bid) * BUF_LEN;
            &self.memory[at..at + len]
        }

        /// Returns buffer `bid` to the kernel.
        fn give_back(&mut self, bid: u16) {
            let slot = usize::from(self.tail & (BUFFERS - 1));
            let addr = self.memory.as_ptr() as u64 + (usize::from(bid) * BUF_LEN) as u64;
            // SAFETY: `slot` < BUFFERS, inside the ring's allocation; the kernel reads a slot
            // only once the tail below has moved past it, and buffer `bid` (inside `memory`,
            // which is never resized or freed) is not read by us until the kernel hands it
            // back in a completion.
            unsafe {
                let e = &mut *self.entries.add(slot);
                e.set_addr(addr);
                e.set_len(BUF_LEN as u32);
                e.set_bid(bid);
            }
            self.tail = self.tail.wrapping_add(1);
            // SAFETY: the tail is the first entry's `resv` field, a u16 the kernel reads
            // atomically; the release store publishes the entry written above.
            unsafe {
                let tail = BufRingEntry::tail(self.entries) as *const AtomicU16;
                (*tail).store(self.tail, Ordering::Release);
            }
        }
    }

    pub fn run(listener: TcpListener) -> io::Result<()> {
        let mut ring: IoUring =
            IoUring::builder().setup_single_issuer().setup_coop_taskrun().build(4096)?;
        let mut bufs = BufRing::new(&ring)?;
        let mut conns: HashMap<u64, Conn> = HashMap::new();
        let lfd = listener.as_raw_fd();
        let accept = opcode::AcceptMulti::new(Fd(lfd)).build().user_data(ACCEPT);
        // SAFETY: the operation names only the listener's fd, which lives until `run` returns.
        unsafe { ring.submission().push(&accept).expect("queue full") };
        let mut touched: Vec<u64> = Vec::new();
        loop {
            match ring.submit_and_wait(1) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => r?,
            };
            let completions: Vec<(u64, i32, u32)> =
                ring.completion().map(|c| (c.user_data(), c.result(), c.flags())).collect();
            for (data, res, flags) in completions {
                if data == ACCEPT {
                    if res >= 0 {
                        let fd = res;
                        // SAFETY: the kernel just made `fd` for this connection; the stream
                        // is forgotten below, the fd kept in `Conn`.
                        let s = unsafe { std::net::TcpStream::from_raw_fd(fd) };
                        s.set_nodelay(true)?;
                        std::mem::forget(s);
                        conns.insert(
                            fd as u64,
                            Conn {
                                fd,
                                input: Vec::new(),
                                out: Vec::new(),
                                sending: Vec::new(),
                                sent: 0,
                                in_flight: false,
                                receiving: true,
                                closed: false,
                            },
                        );
                        receive(&mut ring, fd);
                    }
                    if !cqueue::more(flags) {
                        // SAFETY: as for the first accept.
                        unsafe { ring.submission().push(&accept).expect("queue full") };
                    }
                    continue;
                }
                let (key, op) = (data >> 1, data & 1);
                let Some(c) = conns.get_mut(&key) else { continue };
                if op == RECV {
                    c.receiving = cqueue::more(flags);
                    if res > 0 {
                        let bid = cqueue::buffer_select(flags).expect("a provided buffer");
                        let got = bufs.bytes(bid, res as usize);
                        if c.input.is_empty() {
                            let used = serve(got, &mut c.out);
                            c.input.extend_from_slice(&got[used..]);
                        } else {
                            c.input.extend_from_slice(got);
                            let used = serve(&c.input, &mut c.out);
                            c.input.drain(..used);
                        }
                        bufs.give_back(bid);
                        touched.push(key);
                        if !c.receiving {
                            receive(&mut ring, c.fd);
                            c.receiving = true;
                        }
                    } else if res == -ENOBUFS {
                        receive(&mut ring, c.fd);
                        c.receiving = true;
                    } else {
                        c.closed = true;
                        touched.push(key);
                    }
                } else {
                    c.in_flight = false;
                    if res < 0 {
                        c.closed = true;
                    } else {
                        c.sent += res as usize;
                    }
                    touched.push(key);
                }
            }
            // One send per connection with replies, for all of this turn's completions.
            for key in touched.drain(..) {
                let Some(c) = conns.get_mut(&key) else { continue };
                if c.closed {
                    if !c.in_flight && !c.receiving {
                        // SAFETY: no operation of ours is left on the fd, so its number is
                        // not reused while a completion could still name it.
                        drop(unsafe { std::net::TcpStream::from_raw_fd(c.fd) });
                        conns.remove(&key);
                    }
                    continue;
                }
                if c.in_flight {
                    continue;
                }
                if c.sent == c.sending.len() {
                    c.sending.clear();
                    c.sent = 0;
                    std::mem::swap(&mut c.sending, &mut c.out);
                }
                if c.sent < c.sending.len() {
                    let rest = &c.sending[c.sent..];
                    let send = opcode::Send::new(Fd(c.fd), rest.as_ptr(), rest.len() as u32)
                        .build()
                        .user_data(key << 1 | SEND);
                    // SAFETY: `sending` is neither written nor moved while `in_flight` (only
                    // `out` takes new replies; the swap waits for the completion), and the
                    // connection stays in `conns` until its send completes.
                    unsafe { ring.submission().push(&send).expect("queue full") };
                    c.in_flight = true;
                }
            }
        }
    }

    fn receive(ring: &mut IoUring, fd: RawFd) {
        let recv = opcode::RecvMulti::new(Fd(fd), GROUP).build().user_data((fd as u64) << 1 | RECV);
        // SAFETY: the kernel writes only into provided buffers of `GROUP`, which live for the
        // process (`BufRing`).
        unsafe { ring.submission().push(&recv).expect("queue full") };
    }

    /// `ENOBUFS` (Linux): every provided buffer was in use; receive again.
    const ENOBUFS: i32 = 105;
}
