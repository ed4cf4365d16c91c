//! `jaxpr trace`: runs a Python program with the capture code (shipped in
//! `python/` and embedded in this binary), under an optional time limit,
//! and assembles the session from what the capture code reported. Used by
//! the command line and by the language server's `jaxpr.traceAgain`.

use super::folder::{Kind, SessionDir};
use super::record::{self, Record};
use super::source_map::JaxprFile;
use super::{
    DEFAULT_DIR, FORMAT_VERSION, Function, SESSION_FILE, Session, Status, TraceError, files,
};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The capture code, written into the session folder at each run (so a
/// session records the code that produced it and the binary needs no
/// install location).
const CAPTURE: [(&str, &str); 4] = [
    ("run.py", include_str!("../../../python/run.py")),
    (
        "jaxpr_trace/__init__.py",
        include_str!("../../../python/jaxpr_trace/__init__.py"),
    ),
    (
        "jaxpr_trace/catalyst_hook.py",
        include_str!("../../../python/jaxpr_trace/catalyst_hook.py"),
    ),
    // What the text lacks (constants' values, kernels' blocks), recorded
    // as the Python API records it.
    (
        "jaxpr_trace/recorded.py",
        include_str!("../../../wheel/python/jaxpr/_recorded.py"),
    ),
];

/// Exit status of run.py when the interpreter cannot import JAX.
const NO_JAX_EXIT: i32 = 97;
/// Exit status of run.py when it cannot create its files in the session
/// folder (replaced by a link, or given a file, after `prepare` checked it).
const NO_SESSION_EXIT: i32 = 96;
/// What the capture code reports, one JSON object a line.
pub const EVENTS_FILE: &str = "events.jsonl";
/// The program's stdout and stderr when they are not shown (server runs).
pub const OUTPUT_FILE: &str = "output.txt";

pub struct TraceOptions {
    /// `python train.py --steps 1` (or `python -m pkg.mod ...`).
    pub command: Vec<String>,
    /// Session folder; default `.jaxpr-session` beside the script.
    pub out: Option<PathBuf>,
    pub timeout: Option<Duration>,
    pub cwd: PathBuf,
    /// Send the program's output to `output.txt` in the session instead of
    /// this process's stdout/stderr (the language server's stdout is the
    /// protocol).
    pub capture_output: bool,
    /// When set, the run stops the program and ends as `interrupted`
    /// (see [`stop_on_signals`]).
    pub stop: Option<&'static AtomicBool>,
}

/// The parts of a `python ...` command line.
struct PyCommand {
    python: String,
    flags: Vec<String>,
    /// `["train.py", ...]` or `["-m", "pkg.mod", ...]`.
    target: Vec<String>,
    script: Option<PathBuf>,
}

fn parse_command(cmd: &[String]) -> Result<PyCommand, String> {
    let (python, rest) = cmd
        .split_first()
        .ok_or("no command given: `jaxpr trace -- python train.py ...`")?;
    let mut flags = Vec::new();
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a == "-m" {
            let module = rest.get(i + 1).ok_or("`-m` needs a module name")?;
            let mut target = vec!["-m".to_string(), module.clone()];
            target.extend(rest[i + 2..].iter().cloned());
            return Ok(PyCommand {
                python: python.clone(),
                flags,
                target,
                script: None,
            });
        }
        if a == "-c" || a == "-" {
            return Err(format!(
                "`{python} {a}` is not supported: give a script file or `-m module`"
            ));
        }
        if a.starts_with('-') {
            // Interpreter options (`-u`, `-O`, `-X dev`, `-W error`).
            flags.push(a.clone());
            if matches!(a.as_str(), "-X" | "-W") {
                if let Some(v) = rest.get(i + 1) {
                    flags.push(v.clone());
                }
                i += 1;
            }
            i += 1;
            continue;
        }
        return Ok(PyCommand {
            python: python.clone(),
            flags,
            target: rest[i..].to_vec(),
            script: Some(PathBuf::from(a)),
        });
    }
    Err(format!("`{}` names no script to run", cmd.join(" ")))
}

/// The default session folder of a command: beside its script, or in the
/// working directory for `-m`.
pub fn default_out(command: &[String], cwd: &Path) -> Result<PathBuf, String> {
    let c = parse_command(command)?;
    let base = match &c.script {
        Some(s) => cwd
            .join(s)
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default(),
        None => cwd.to_path_buf(),
    };
    Ok(base.join(DEFAULT_DIR))
}

/// A session holds a few dozen files; a folder of more than this is refused
/// rather than half listed (what is not listed before a run would count as
/// written by it).
const MAX_ENTRIES: usize = 100_000;

/// The paths below the folder (relative, `/`-separated), symbolic links not
/// followed.
fn walk(dir: &SessionDir) -> Result<BTreeSet<String>, String> {
    Ok(entries(dir)?.into_keys().collect())
}

fn entries(dir: &SessionDir) -> Result<BTreeMap<String, Kind>, String> {
    dir.entries(MAX_ENTRIES)
        .map_err(|e| format!("{e}; choose another --out"))
}

/// Removes what an earlier run listed in its record: files first, then the
/// folders it made, deepest first and only when empty (a file someone else
/// put there stays). Paths are followed through no link (see
/// [`SessionDir`]), so nothing outside the folder can be removed.
fn remove_listed(dir: &SessionDir, listed: &BTreeSet<String>, now: &BTreeMap<String, Kind>) {
    let mut folders = Vec::new();
    for rel in listed {
        match now.get(rel) {
            Some(Kind::Dir) => folders.push(rel.as_str()),
            Some(_) => {
                let _ = dir.remove(rel);
            }
            None => {}
        }
    }
    folders.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    for f in folders {
        let _ = dir.remove(f);
    }
}

/// Makes the session folder ready for a run and returns it, opened, with
/// what it holds before the run writes anything. A folder that exists and
/// is not empty must be a session this machine's `jaxpr trace` wrote (its
/// record says so, and its session.json is unchanged): only the files of
/// that record are removed. Anything else is refused (a mistyped `--out`, a
/// folder of the user's, a session.json planted in a repository): nothing
/// is deleted or rewritten that an earlier run did not write. A folder that
/// is itself a symbolic link, or that holds one anywhere, is refused before
/// anything in it is touched: a session `trace` wrote holds no link, so one
/// there was put by someone else, and writing or removing through it could
/// reach files outside the folder.
fn prepare(out: &Path) -> Result<(SessionDir, BTreeSet<String>), String> {
    let shown = out.display();
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => {
            return Err(format!(
                "{shown} is a symbolic link: `jaxpr trace` does not write a session through a link; give the folder it names as --out, or choose another"
            ));
        }
        Ok(m) if !m.is_dir() => {
            return Err(format!(
                "{shown} exists and is not a folder; choose another --out"
            ));
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(out).map_err(|e| format!("{shown}: {e}"))?,
    }
    let dir = SessionDir::open(out).map_err(|e| e.to_string())?;
    if !dir.is_empty().map_err(|e| e.to_string())? {
        let refuse = |why: String| {
            format!(
                "{shown} is not empty and is not a session to replace: {why}; choose another --out (or empty the folder yourself)"
            )
        };
        let r = record::lookup(out)
            .ok_or_else(|| refuse("`jaxpr trace` on this machine did not write it".into()))?;
        let found = entries(&dir)?;
        if let Some((link, _)) = found.iter().find(|(_, k)| **k == Kind::Link) {
            return Err(format!(
                "{shown}/{link} is a symbolic link, which `jaxpr trace` never writes: a session it wrote holds none, so the folder was changed by someone else; nothing in it was touched. Remove the link (or the folder) yourself, or choose another --out"
            ));
        }
        if let Some(h) = &r.session_sha256 {
            let now = dir
                .read(SESSION_FILE, files::MAX_FILE_BYTES)
                .ok()
                .flatten()
                .map(|b| record::hex_sha256(&b));
            if now.as_ref() != Some(h) {
                return Err(refuse(format!(
                    "its {SESSION_FILE} was changed or removed since `jaxpr trace` wrote it"
                )));
            }
        }
        remove_listed(&dir, &r.files, &found);
    }
    let before = walk(&dir)?;
    let capture: Vec<(String, &str)> = CAPTURE
        .iter()
        .map(|(rel, text)| (format!("capture/{rel}"), *text))
        .collect();
    // What this run writes must not be there already (a file of unknown
    // origin is never overwritten).
    let names = [SESSION_FILE, EVENTS_FILE, OUTPUT_FILE].into_iter();
    if let Some(taken) = names
        .chain(capture.iter().map(|(rel, _)| rel.as_str()))
        .find(|rel| before.contains(*rel))
    {
        return Err(format!(
            "{}/{taken} exists and `jaxpr trace` did not write it; choose another --out",
            out.display()
        ));
    }
    // A session is a local artefact (absolute paths, this machine's
    // Python); a .gitignore of the user's is left as it is.
    let gitignore = (!before.contains(".gitignore")).then(|| (".gitignore".to_string(), "*\n"));
    for (rel, text) in gitignore.iter().chain(&capture) {
        dir.write_new(rel, text.as_bytes())
            .map_err(|e| e.to_string())?;
    }
    // Recorded before the run, so a run that is killed outright can still
    // be replaced by the next one.
    record::store(&Record {
        dir: std::fs::canonicalize(out).map_err(|e| format!("{shown}: {e}"))?,
        session_sha256: None,
        files: walk(&dir)?.difference(&before).cloned().collect(),
    })?;
    Ok((dir, before))
}

/// How the program process ended.
enum Ended {
    Exited(Option<i32>),
    TimedOut,
    Interrupted,
    NotStarted(std::io::Error),
}

/// Sends `signal` to the process group `pgid` (the program and whatever it
/// started), through the system call.
#[cfg(unix)]
fn signal_group(pgid: u32, signal: i32) {
    // SAFETY: killpg has no memory effects; a group that is gone is ESRCH.
    unsafe {
        libc::killpg(pgid as libc::pid_t, signal);
    }
}

/// Set by a signal that asks `jaxpr trace` to stop (see [`stop_on_signals`]).
static STOP_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn request_stop(_: libc::c_int) {
    STOP_REQUESTED.store(true, Ordering::SeqCst);
}

/// Makes SIGINT, SIGTERM and SIGHUP ask the running trace to stop (the
/// command line's handlers; the program runs in a process group of its
/// own, which a Ctrl-C at the terminal does not reach): the trace then
/// stops the program's whole group and writes the session as
/// `interrupted`. Returns the flag to pass as [`TraceOptions::stop`].
pub fn stop_on_signals() -> &'static AtomicBool {
    #[cfg(unix)]
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = request_stop as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
    &STOP_REQUESTED
}

/// How long the guard goes on killing and reaping what is below it before
/// it gives up on what will not end (a process in uninterruptible sleep
/// that SIGKILL does not end at once).
const CLEANUP_LIMIT: Duration = Duration::from_secs(5);

/// This process's parent, as /proc/PID/stat says (`None` when `pid` is gone
/// or its line cannot be read). Async-signal-safe: no allocation, plain
/// system calls on stack buffers.
#[cfg(target_os = "linux")]
fn parent_pid(pid: libc::pid_t) -> Option<libc::pid_t> {
    // "/proc/" + up to 10 digits + "/stat" + NUL.
    let mut path = [0u8; 32];
    let mut n = 0;
    for &b in b"/proc/" {
        path[n] = b;
        n += 1;
    }
    let mut digits = [0u8; 10];
    let (mut d, mut v) = (0, pid as u32);
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    while d > 0 {
        d -= 1;
        path[n] = digits[d];
        n += 1;
    }
    for &b in b"/stat" {
        path[n] = b;
        n += 1;
    }
    // SAFETY: `path` is NUL-terminated (zeroed past `n`); `buf` is ours.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut buf = [0u8; 256];
        let len = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
        libc::close(fd);
        if len <= 0 {
            return None;
        }
        // "PID (COMM) STATE PPID ...": COMM may hold ')' but is at most 64
        // bytes, and nothing after it does, so the last ')' in the first
        // 256 bytes closes it.
        let line = &buf[..len as usize];
        let close = line.iter().rposition(|&b| b == b')')?;
        let mut fields = line[close + 1..]
            .split(|&b| b == b' ')
            .filter(|f| !f.is_empty());
        let _state = fields.next()?;
        let mut ppid: libc::pid_t = 0;
        for &b in fields.next()? {
            if !b.is_ascii_digit() {
                return None;
            }
            ppid = ppid
                .checked_mul(10)?
                .checked_add(libc::pid_t::from(b - b'0'))?;
        }
        Some(ppid)
    }
}

/// Sends SIGKILL to every child of this process (its own and the orphans
/// it adopted as a subreaper) found in /proc; returns how many it could
/// signal (a child running a set-user-ID program may refuse: EPERM).
/// Async-signal-safe, as [`parent_pid`].
#[cfg(target_os = "linux")]
fn kill_children() -> usize {
    // SAFETY: system calls on stack buffers; `dirent64` records are read
    // within the length getdents64 returned.
    unsafe {
        let me = libc::getpid();
        let proc_fd = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if proc_fd < 0 {
            return 0;
        }
        let mut signalled = 0;
        // Aligned for the records' 8-byte fields.
        let mut buf = [0u64; 512];
        loop {
            let len = libc::syscall(
                libc::SYS_getdents64,
                proc_fd,
                buf.as_mut_ptr(),
                std::mem::size_of_val(&buf),
            );
            if len <= 0 {
                break;
            }
            let bytes = std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len as usize);
            let mut at = 0;
            while at + 19 < bytes.len() {
                // struct linux_dirent64 { u64 ino; i64 off; u16 reclen; u8 type; char name[]; }
                let reclen = u16::from_ne_bytes([bytes[at + 16], bytes[at + 17]]) as usize;
                if reclen == 0 {
                    break;
                }
                let name = &bytes[at + 19..(at + reclen).min(bytes.len())];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
                at += reclen;
                let mut pid: libc::pid_t = 0;
                let mut numeric = !name.is_empty();
                for &b in name {
                    match pid.checked_mul(10).and_then(|p| {
                        b.is_ascii_digit()
                            .then(|| p.checked_add(libc::pid_t::from(b - b'0')))
                            .flatten()
                    }) {
                        Some(p) => pid = p,
                        None => {
                            numeric = false;
                            break;
                        }
                    }
                }
                if numeric && parent_pid(pid) == Some(me) && libc::kill(pid, libc::SIGKILL) == 0 {
                    signalled += 1;
                }
            }
        }
        libc::close(proc_fd);
        signalled
    }
}

/// Kills everything below the guard and reaps it: the guard is a child
/// subreaper, so a process whose parent dies (a daemon that forked twice
/// and called `setsid`, the children of a killed child) becomes the
/// guard's child instead of init's, and killing the children round after
/// round, each round reaping the dead, reaches every descendant. Returns
/// when no child is left, when none left can be signalled, or after
/// [`CLEANUP_LIMIT`]. A dead child stays a zombie until reaped here, so its
/// pid is not reused by an unrelated process while a round signals it.
/// Async-signal-safe.
#[cfg(target_os = "linux")]
fn kill_descendants() {
    // SAFETY: system calls only.
    unsafe {
        let now = || {
            let mut t: libc::timespec = std::mem::zeroed();
            libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t);
            Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
        };
        let start = now();
        loop {
            loop {
                let r = libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG);
                if r > 0 || (r < 0 && *libc::__errno_location() == libc::EINTR) {
                    continue;
                }
                if r < 0 {
                    // ECHILD: nothing is left below the guard.
                    return;
                }
                break;
            }
            if kill_children() == 0 || now().saturating_sub(start) >= CLEANUP_LIMIT {
                return;
            }
            // What was killed needs a moment to end before it is reaped
            // (and its own children are handed to the guard).
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        }
    }
}

/// The guard's handler of SIGUSR1: `jaxpr trace` ended (the death signal)
/// or asks the program to be stopped (time-out, an interrupt's grace
/// over). Everything below the guard is killed, then the guard ends.
#[cfg(target_os = "linux")]
extern "C" fn guard_stop(_: libc::c_int) {
    // SAFETY: kill_descendants and _exit are async-signal-safe.
    unsafe {
        kill_descendants();
        libc::_exit(128 + libc::SIGKILL);
    }
}

/// Makes everything the program starts end with it and with `jaxpr trace`,
/// even when `trace` is killed with SIGKILL and runs no code of its own:
/// the process `trace` starts (the leader of the program's process group)
/// makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`), forks the
/// program and stays as its guard. Every process the program starts stays
/// below the guard — one that calls `setsid` or leaves the group too, and
/// one whose parent ends is handed to the guard — until the guard kills
/// them all ([`kill_descendants`]): when the program ends, when `trace`
/// asks (SIGUSR1), and when `trace` ends (the kernel sends the guard
/// SIGUSR1, `PR_SET_PDEATHSIG`). The program in turn dies with its guard.
/// The guard ends as the program ended, so `trace` sees the program's
/// status.
///
/// Runs in the child of `fork`, before `exec`: only async-signal-safe calls.
#[cfg(target_os = "linux")]
fn guard_group() -> std::io::Result<()> {
    // SAFETY: system calls on this process only, with valid arguments.
    unsafe {
        let trace = libc::getppid();
        let guard = libc::getpid();
        // Without it (a kernel before 3.4) orphans go to init, as before,
        // and only the process group is killed.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong);
        let program = libc::fork();
        if program < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if program == 0 {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            if libc::getppid() != guard {
                libc::_exit(127);
            }
            // On to exec the program.
            return Ok(());
        }
        // The guard. `trace` stops the program with SIGINT to the group, and
        // a program may signal its own group (`killpg(0, SIGTERM)` to end
        // its workers): the guard stays to clean up and report how the
        // program ended, so it ignores the signals that would end it but
        // SIGKILL and its own SIGUSR1.
        for sig in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGUSR2,
            libc::SIGALRM,
            libc::SIGPIPE,
        ] {
            libc::signal(sig, libc::SIG_IGN);
        }
        // The guard reaps its children itself: a SIGCHLD handler or
        // SIG_IGN inherited from `trace` (the language server's runtime
        // has one) must not run here or reap them first.
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = guard_stop as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut());
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGUSR1 as libc::c_ulong);
        if libc::getppid() != trace {
            // `trace` ended before the death signal was set.
            guard_stop(libc::SIGUSR1);
        }
        // The descriptors `trace` left open, among them the pipe on which
        // its `spawn` waits for the exec: it must see the program's exec.
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..1024 {
                libc::close(fd);
            }
        }
        // Orphans handed to the guard while the program runs are reaped as
        // they end (no zombies pile up under a long run).
        let mut status = 0;
        loop {
            let r = libc::waitpid(-1, &mut status, 0);
            if r == program {
                break;
            }
            if r < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(127);
            }
        }
        // What the program started and left running goes with it.
        kill_descendants();
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            libc::kill(guard, sig);
            libc::_exit(128 + sig);
        }
        libc::_exit(libc::WEXITSTATUS(status));
    }
}

/// Seconds a stopped program gets to end (its `KeyboardInterrupt`
/// reported) before it and everything it started are killed.
const GRACE: Duration = Duration::from_secs(2);

/// Kills the program and everything it started: on Linux the guard does
/// it ([`guard_group`]), which reaches the processes outside the group;
/// elsewhere the group is killed.
fn stop_everything(child: &mut std::process::Child) {
    #[cfg(target_os = "linux")]
    // SAFETY: a signal to our own child, which has not been reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGUSR1);
    }
    #[cfg(not(target_os = "linux"))]
    {
        #[cfg(unix)]
        signal_group(child.id(), libc::SIGKILL);
        let _ = child.kill();
    }
}

fn run_process(mut cmd: Command, timeout: Option<Duration>, stop: Option<&AtomicBool>) -> Ended {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group, so a time-out or an interrupt also stops
        // what it started.
        cmd.process_group(0);
        #[cfg(target_os = "linux")]
        // SAFETY: `guard_group` runs between fork and exec and makes only
        // async-signal-safe calls.
        unsafe {
            cmd.pre_exec(guard_group);
        }
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Ended::NotStarted(e),
    };
    let pgid = child.id();
    let start = Instant::now();
    // Since when the program is being stopped, why, and whether it was
    // told to be killed (rather than interrupted).
    let mut stopping: Option<(Instant, Ended, bool)> = None;
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                break match stopping {
                    Some((_, why, _)) => why,
                    None => Ended::Exited(status.code()),
                };
            }
            Ok(None) => {}
            Err(_) => break Ended::Exited(None),
        }
        match &mut stopping {
            None if timeout.is_some_and(|t| start.elapsed() >= t) => {
                stop_everything(&mut child);
                stopping = Some((Instant::now(), Ended::TimedOut, true));
            }
            None if stop.is_some_and(|s| s.load(Ordering::SeqCst)) => {
                // As a Ctrl-C would: the program may report where it was.
                #[cfg(unix)]
                signal_group(pgid, libc::SIGINT);
                stopping = Some((Instant::now(), Ended::Interrupted, false));
            }
            Some((since, _, killed @ false)) if since.elapsed() >= GRACE => {
                stop_everything(&mut child);
                *since = Instant::now();
                *killed = true;
            }
            // The guard did not end after its clean-up: it and the group
            // are killed outright (what it adopted may then survive).
            Some((since, _, true)) if since.elapsed() >= CLEANUP_LIMIT + GRACE => {
                #[cfg(unix)]
                signal_group(pgid, libc::SIGKILL);
                let _ = child.kill();
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // What the program started and left running goes with it.
    #[cfg(unix)]
    signal_group(pgid, libc::SIGKILL);
    ended
}

/// Runs the program and writes the session. Returns the session folder and
/// the session (also when the program failed: the session then says what
/// happened); `Err` only when nothing could be run or written.
pub fn run(opts: &TraceOptions) -> Result<(PathBuf, Session), String> {
    let c = parse_command(&opts.command)?;
    let out = match &opts.out {
        Some(o) => opts.cwd.join(o),
        None => default_out(&opts.command, &opts.cwd)?,
    };
    let (dir, before) = prepare(&out)?;
    let abs_out = std::fs::canonicalize(&out).unwrap_or(out.clone());
    let mut cmd = Command::new(&c.python);
    cmd.args(&c.flags)
        .arg(abs_out.join("capture").join("run.py"))
        .arg(&abs_out)
        .args(&c.target)
        .current_dir(&opts.cwd);
    if opts.capture_output {
        // Nothing to read from: the server's stdin is the protocol.
        cmd.stdin(Stdio::null());
        let f = dir.create_new(OUTPUT_FILE).map_err(|e| e.to_string())?;
        let g = f.try_clone().map_err(|e| e.to_string())?;
        cmd.stdout(f).stderr(g);
    }
    let started = Instant::now();
    let ended = run_process(cmd, opts.timeout, opts.stop);
    let elapsed = started.elapsed().as_secs_f64();
    let (mut session, uncaught) = assemble(&dir, &abs_out, &opts.cwd, &opts.command);
    session.elapsed = elapsed;
    if matches!(ended, Ended::Exited(Some(NO_SESSION_EXIT))) && session.versions.is_empty() {
        return Err(format!(
            "the capture code could not create its files in {} (it says why in the program's output): something in the folder changed after `jaxpr trace` checked it; nothing was written through it",
            abs_out.display()
        ));
    }
    let (status, exit_code, message) = match ended {
        Ended::NotStarted(e) => (
            Status::NoPython,
            None,
            Some(format!("cannot run `{}`: {e}", c.python)),
        ),
        Ended::Interrupted => (
            Status::Interrupted,
            None,
            Some(
                "`jaxpr trace` was interrupted and stopped the program; the session holds what it traced until then"
                    .to_string(),
            ),
        ),
        Ended::TimedOut => (
            Status::Timeout,
            None,
            Some(format!(
                "the program was still running after {:.0} s and was stopped (--timeout); the session holds what it traced until then",
                opts.timeout.unwrap_or_default().as_secs_f64()
            )),
        ),
        Ended::Exited(Some(NO_JAX_EXIT)) if session.versions.is_empty() => (
            Status::NoJax,
            Some(NO_JAX_EXIT),
            Some(format!(
                "`{}` cannot import jax; install jax in that environment or name its Python",
                c.python
            )),
        ),
        Ended::Exited(Some(0)) => (Status::Ok, Some(0), None),
        Ended::Exited(code) => {
            let why = match uncaught {
                Some(u) => format!(
                    "the program raised {}: {}{}",
                    str_field(&u, "kind").unwrap_or_default(),
                    str_field(&u, "message").unwrap_or_default(),
                    match (str_field(&u, "file"), u32_field(&u, "line")) {
                        (Some(f), Some(l)) => format!(" ({f}:{l})"),
                        _ => String::new(),
                    }
                ),
                None => match code {
                    Some(c) => format!("the program exited with status {c}"),
                    None => "the program was killed by a signal".to_string(),
                },
            };
            (Status::ScriptFailed, code, Some(why))
        }
    };
    session.status = status;
    session.exit_code = exit_code;
    session.message = message;
    let json = serde_json::to_string_pretty(&session).map_err(|e| e.to_string())? + "\n";
    // Created, never written over: a session.json (or a link) that appeared
    // during the run is left as it is and the run fails.
    dir.write_new(SESSION_FILE, json.as_bytes())
        .map_err(|e| format!("{e}; the session was not written, choose another --out"))?;
    record::store(&Record {
        dir: abs_out.clone(),
        session_sha256: Some(record::hex_sha256(json.as_bytes())),
        files: walk(&dir)?.difference(&before).cloned().collect(),
    })?;
    Ok((abs_out, session))
}

fn str_field(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

fn u32_field(v: &Value, k: &str) -> Option<u32> {
    v.get(k).and_then(Value::as_u64).map(|n| n as u32)
}

/// Builds the session from `events.jsonl` and the jaxpr files (status
/// fields are filled in by the caller), with the exception that ended the
/// program if one did.
fn assemble(
    dir: &SessionDir,
    out: &Path,
    cwd: &Path,
    command: &[String],
) -> (Session, Option<Value>) {
    let cwd = std::fs::canonicalize(cwd).unwrap_or(cwd.to_path_buf());
    let mut s = Session {
        version: FORMAT_VERSION,
        status: Status::Ok,
        message: None,
        exit_code: None,
        command: command.to_vec(),
        cwd: cwd.clone(),
        python: None,
        versions: Default::default(),
        elapsed: 0.0,
        functions: Vec::new(),
        errors: Vec::new(),
    };
    let mut uncaught = None;
    let text = dir
        .read_text(EVENTS_FILE, files::MAX_FILE_BYTES)
        .ok()
        .flatten()
        .unwrap_or_default();
    // A killed program may leave a half-written last line: skipped.
    for ev in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match ev.get("event").and_then(Value::as_str) {
            Some("start") => {
                s.python = str_field(&ev, "python");
                if let Some(vs) = ev.get("versions").and_then(Value::as_object) {
                    for (k, v) in vs {
                        if let Some(v) = v.as_str() {
                            s.versions.insert(k.clone(), v.to_string());
                        }
                    }
                }
            }
            Some("library") => {
                if let (Some(n), Some(v)) = (str_field(&ev, "name"), str_field(&ev, "version")) {
                    s.versions.insert(n, v);
                }
            }
            Some("function") => {
                if let Some(f) = function(dir, out, &cwd, &ev) {
                    s.functions.push(f);
                }
            }
            Some("error") => s.errors.push(TraceError {
                kind: str_field(&ev, "kind").unwrap_or_default(),
                message: str_field(&ev, "message").unwrap_or_default(),
                file: str_field(&ev, "file").map(PathBuf::from),
                line: u32_field(&ev, "line"),
                col: u32_field(&ev, "col"),
                function: str_field(&ev, "function"),
                during: str_field(&ev, "during").unwrap_or_default(),
            }),
            Some("exit") => uncaught = ev.get("uncaught").cloned(),
            _ => {}
        }
    }
    (s, uncaught)
}

fn function(dir: &SessionDir, out: &Path, cwd: &Path, ev: &Value) -> Option<Function> {
    let jaxpr = str_field(ev, "jaxpr")?;
    let text = dir.read_text(&jaxpr, files::MAX_FILE_BYTES).ok()??;
    let path = out.join(&jaxpr);
    let db = jaxpr_db::RootDatabase::default();
    let file = jaxpr_db::SourceFile::new(&db, path.display().to_string(), text);
    let jf = JaxprFile::of(&db, file);
    let sig = jf.main_signature();
    let strings = |k: &str| -> Vec<String> {
        ev.get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The printed binder types name dimension variables (`f64[a]`), which
    // Python's own rendering of Catalyst's dynamic shapes does not.
    let or_python = |printed: Vec<String>, k: &str| {
        if printed.is_empty() {
            strings(k)
        } else {
            printed
        }
    };
    Some(Function {
        name: str_field(ev, "name").unwrap_or_default(),
        kind: str_field(ev, "kind").unwrap_or_default(),
        file: str_field(ev, "file").map(PathBuf::from),
        line: u32_field(ev, "line"),
        in_avals: or_python(sig.in_avals, "in_avals"),
        out_avals: or_python(sig.out_avals, "out_avals"),
        arg_names: ev.get("arg_names").and_then(Value::as_array).map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        }),
        in_type: sig.in_type,
        out_type: sig.out_type,
        check_errors: jf.errors().count(),
        source_map: jf.source_map(cwd),
        jaxpr,
    })
}
