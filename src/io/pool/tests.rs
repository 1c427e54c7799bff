//! Tests of [`super::Pool`]: deterministic through channels and barriers, never
//! through sleeps.

use super::*;
use crate::io::{DEFAULT_MAX_QUEUE, DEFAULT_POOL, Pools, SubmitError, TaskError};
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Barrier;
use std::sync::mpsc;
use std::task::Poll;

/// The test's end of a [`gate`]: it learns when the task holds its thread
/// and lets it go.
struct Gate {
    release: mpsc::Sender<()>,
    started: mpsc::Receiver<()>,
}

impl Gate {
    /// Waits until a pool thread runs the gated task. A test that orders
    /// tasks behind a held thread must wait for this: until a thread takes
    /// the gated task it is only queued, and tasks submitted after it may
    /// overtake it (a higher rank or the front lane).
    fn wait_started(&self) {
        self.started
            .recv_timeout(Duration::from_secs(10))
            .expect("a pool thread takes the gated task");
    }

    fn open(&self) {
        // The task may be gone already (a test that drops the pool).
        let _ = self.release.send(());
    }
}

/// The values tasks pushed, in order (two threads push in either order).
fn sorted(pushed: &Mutex<Vec<usize>>) -> Vec<usize> {
    let mut v = pushed.lock().unwrap().clone();
    v.sort_unstable();
    v
}

/// A task that blocks its pool thread until the test opens its [`Gate`].
fn gate() -> (Gate, impl FnOnce() + Send + 'static) {
    let (release, rx) = mpsc::channel::<()>();
    let (started_tx, started) = mpsc::channel::<()>();
    (Gate { release, started }, move || {
        let _ = started_tx.send(());
        let _ = rx.recv();
    })
}

#[test]
fn tasks_run_in_fifo_order() {
    let pool = Pool::new("fifo", 1, 100).unwrap();
    let (release, blocker) = gate();
    let first = pool.submit(blocker).unwrap();
    release.wait_started();
    let order = Arc::new(Mutex::new(Vec::new()));
    let done: Vec<_> = (0..20)
        .map(|i| {
            let order = Arc::clone(&order);
            pool.submit(move || order.lock().unwrap().push(i)).unwrap()
        })
        .collect();
    release.open();
    first.wait_blocking().unwrap();
    for d in done {
        d.wait_blocking().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..20).collect::<Vec<_>>());
}

#[test]
fn front_lane_runs_before_the_queue_and_counts_against_max_queue() {
    let pool = Pool::new("lanes", 1, 4).unwrap();
    let (release, blocker) = gate();
    let first = pool.submit(blocker).unwrap();
    release.wait_started();
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |lane, i| {
        let order = Arc::clone(&order);
        pool.submit_to(lane, move || order.lock().unwrap().push(i))
            .unwrap()
    };
    let done = vec![
        push(Lane::Normal, 1),
        push(Lane::Normal, 2),
        push(Lane::Front, 10),
        push(Lane::Front, 11),
    ];
    // Four waiting: the fifth is refused whatever its lane.
    assert!(matches!(
        pool.submit_to(Lane::Front, || ()),
        Err(SubmitError::Overflow { waiting: 4, .. })
    ));
    release.open();
    first.wait_blocking().unwrap();
    for d in done {
        d.wait_blocking().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), vec![10, 11, 1, 2]);
    assert_eq!(pool.stats().front, 2);
}

#[test]
fn overflow_message_is_nginx_text() {
    let pool = Pool::new("pool_1", 1, 2).unwrap();
    let (release, blocker) = gate();
    let running = pool.submit(blocker).unwrap();
    release.wait_started();
    let queued: Vec<_> = (0..2).map(|_| pool.submit(|| ()).unwrap()).collect();
    let err = pool.submit(|| ()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "thread pool \"pool_1\" queue overflow: 2 tasks waiting"
    );
    assert_eq!(
        err,
        SubmitError::Overflow {
            pool: Arc::from("pool_1"),
            waiting: 2
        }
    );
    assert_eq!(pool.stats().overflows, 1);
    assert_eq!(pool.stats().waiting, 2);
    release.open();
    running.wait_blocking().unwrap();
    for q in queued {
        q.wait_blocking().unwrap();
    }
    assert_eq!(pool.stats().completed, 3);
    assert_eq!(pool.stats().waiting, 0);
}

#[test]
fn max_queue_zero_accepts_only_while_a_thread_idles() {
    let pool = Pool::new("zero", 2, 0).unwrap();
    let (release_a, a) = gate();
    let (release_b, b) = gate();
    let a = pool.submit(a).expect("thread 1 idle");
    release_a.wait_started();
    let b = pool.submit(b).expect("thread 2 idle");
    release_b.wait_started();
    let err = pool.submit(|| ()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "thread pool \"zero\" queue overflow: 0 tasks waiting"
    );
    release_a.open();
    a.wait_blocking().unwrap();
    // A completion is delivered only after its thread counts as idle again.
    let c = pool.submit(|| 7).expect("thread of A idle again");
    assert_eq!(c.wait_blocking().unwrap(), 7);
    release_b.open();
    b.wait_blocking().unwrap();
}

#[test]
fn threads_are_named_pool_hash_index() {
    let pool = Pool::new("pool_1", 3, 0).unwrap();
    let barrier = Arc::new(Barrier::new(3));
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            pool.submit(move || {
                // All three must run at once, hence on three threads.
                barrier.wait();
                let comm = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
                (
                    thread::current().name().map(str::to_owned),
                    comm.trim_end().to_owned(),
                )
            })
            .unwrap()
        })
        .collect();
    let mut names = BTreeSet::new();
    for t in tasks {
        let (rust_name, comm) = t.wait_blocking().unwrap();
        assert_eq!(rust_name.as_deref(), Some(comm.as_str()));
        names.insert(comm);
    }
    let expected: BTreeSet<String> = ["pool_1#1", "pool_1#2", "pool_1#3"]
        .map(String::from)
        .into();
    assert_eq!(names, expected);
}

#[test]
fn long_names_keep_their_index() {
    assert_eq!(thread_name("default", 32), "default#32");
    assert_eq!(thread_name("very_long_pool_name", 12), "very_long_po#12");
    assert_eq!(thread_name("pool_ééééééé", 3), "pool_éééé#3");
    assert!(thread_name("x", 1_000_000_000_000).len() <= THREAD_NAME_MAX);
}

#[test]
fn completion_wakes_a_current_thread_runtime() {
    let pool = Pool::new("wake", 1, 4).unwrap();
    let (release, rx) = mpsc::channel::<()>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let mut done = pool
            .submit(move || {
                let _ = rx.recv();
                42
            })
            .unwrap();
        // The task is held by the gate, so the first poll must be pending and
        // the runtime has to park until the pool thread's send wakes it.
        let pending =
            std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut done).poll(cx).is_pending())).await;
        assert!(pending);
        release.send(()).unwrap();
        done.await
    });
    assert_eq!(got, Ok(42));
}

#[test]
fn a_panicking_task_fails_alone() {
    let pool = Pool::new("panics", 1, 4).unwrap();
    let bad = pool
        .submit(|| -> u32 { panic!("task panic (expected by the test)") })
        .unwrap();
    assert_eq!(
        bad.wait_blocking(),
        Err(TaskError::Panicked {
            pool: Arc::from("panics")
        })
    );
    assert_eq!(pool.submit(|| 1).unwrap().wait_blocking(), Ok(1));
}

#[test]
fn shutdown_drains_the_queue_then_refuses() {
    let pool = Pool::new("drain", 1, 10).unwrap();
    let (release, blocker) = gate();
    let first = pool.submit(blocker).unwrap();
    release.wait_started();
    let rest: Vec<_> = (0..5).map(|i| pool.submit(move || i).unwrap()).collect();
    release.open();
    pool.shutdown();
    assert_eq!(pool.stats().completed, 6);
    first.wait_blocking().unwrap();
    let results: Vec<_> = rest
        .into_iter()
        .map(|c| c.wait_blocking().unwrap())
        .collect();
    assert_eq!(results, vec![0, 1, 2, 3, 4]);
    let err = pool.submit(|| ()).unwrap_err();
    assert_eq!(err.to_string(), "thread pool \"drain\" is shutting down");
}

#[test]
fn drop_does_not_wait_for_a_stuck_task() {
    let pool = Pool::new("stuck", 1, 10).unwrap();
    let (release, blocker) = gate();
    let stuck = pool.submit(blocker).unwrap();
    release.wait_started();
    let queued = pool.submit(|| "ran after drop").unwrap();
    drop(pool); // must return although the thread is blocked
    release.open();
    stuck.wait_blocking().unwrap();
    assert_eq!(queued.wait_blocking(), Ok("ran after drop"));
}

#[test]
fn stats_and_timings_count_every_task() {
    let pool = Pool::new("stats", 2, 10).unwrap();
    for c in (0..8)
        .map(|_| pool.submit(|| ()).unwrap())
        .collect::<Vec<_>>()
    {
        c.wait_blocking().unwrap();
    }
    let s = pool.stats();
    assert_eq!(
        (
            s.threads,
            s.max_queue,
            s.submitted,
            s.completed,
            s.running,
            s.overflows
        ),
        (2, 10, 8, 8, 0, 0)
    );
    let t = pool.timings();
    assert_eq!(t.run.len(), 8);
    assert_eq!(t.queue_wait.len(), 8);
}

#[test]
fn zero_threads_is_invalid() {
    assert_eq!(
        Pool::new("none", 0, 1).unwrap_err().raw_os_error(),
        Some(libc::EINVAL)
    );
}

#[test]
fn registry_finds_pools_by_name() {
    let mut pools = Pools::new();
    pools.add(DEFAULT_POOL, 2, DEFAULT_MAX_QUEUE).unwrap();
    pools.add("pool_2", 1, 0).unwrap();
    assert_eq!(pools.get("pool_2").unwrap().name(), "pool_2");
    assert!(pools.get("pool_3").is_none());
    let dup = pools.add("pool_2", 1, 0).unwrap_err();
    assert_eq!(dup.to_string(), "duplicate thread pool \"pool_2\"");
    assert_eq!(pools.iter().count(), 2);
    pools.shutdown();
    assert!(pools.get(DEFAULT_POOL).unwrap().submit(|| ()).is_err());
}

/// A reload changes `threads=` and `max_queue=` of the one pool of a name:
/// growing starts threads at once, shrinking lets idle ones go, and a task
/// running on a surplus thread finishes.
#[test]
fn resize_grows_and_shrinks_one_pool() {
    let pool = Pool::new("resize", 1, 0).unwrap();
    pool.resize(3, 0).unwrap();
    assert_eq!(pool.alive(), 3);
    assert_eq!(pool.stats().threads, 3);
    // Three tasks run at once: three threads, the new ones named #2 and #3.
    let barrier = Arc::new(Barrier::new(3));
    let tasks: Vec<_> = (0..3)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            pool.submit(move || {
                barrier.wait();
                thread::current().name().map(str::to_owned)
            })
            .unwrap()
        })
        .collect();
    let names: BTreeSet<_> = tasks
        .into_iter()
        .map(|t| t.wait_blocking().unwrap().unwrap())
        .collect();
    assert_eq!(
        names,
        ["resize#1", "resize#2", "resize#3"]
            .map(String::from)
            .into()
    );

    // Shrink while one task runs: it finishes; the idle surplus exits.
    let (release, blocker) = gate();
    let running = pool.submit(blocker).unwrap();
    release.wait_started();
    pool.resize(1, 5).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while pool.alive() > 1 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(pool.alive(), 1, "the idle surplus threads exit");
    // The new max_queue applies: five may wait behind the running task.
    let queued: Vec<_> = (0..5).map(|_| pool.submit(|| ()).unwrap()).collect();
    assert!(matches!(
        pool.submit(|| ()),
        Err(SubmitError::Overflow { waiting: 5, .. })
    ));
    release.open();
    running.wait_blocking().unwrap();
    for q in queued {
        q.wait_blocking().unwrap();
    }
    assert!(pool.resize(0, 0).is_err(), "threads=0 is refused");
}

#[test]
fn a_popular_files_miss_runs_before_older_cold_ones() {
    // One thread, held by a cold task; then cold misses (rank 1), a
    // popular file's miss (rank 15) and a middling one (rank 5) wait.
    let pool = Pool::new("ranked", 1, 100).unwrap();
    let (release, blocker) = gate();
    let first = pool.submit_ranked(Lane::Normal, 1, blocker).unwrap();
    release.wait_started();
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |lane, rank, i| {
        let order = Arc::clone(&order);
        pool.submit_ranked(lane, rank, move || order.lock().unwrap().push(i))
            .unwrap()
    };
    let mut done: Vec<_> = (0..5).map(|i| push(Lane::Normal, 1, i)).collect();
    done.push(push(Lane::Normal, 15, 100));
    done.push(push(Lane::Normal, 5, 50));
    done.push(push(Lane::Normal, 15, 101));
    done.push(push(Lane::Front, 0, 200));
    release.open();
    first.wait_blocking().unwrap();
    for d in done {
        d.wait_blocking().unwrap();
    }
    // The front lane first, then by rank, FIFO within a rank.
    assert_eq!(
        *order.lock().unwrap(),
        vec![200, 100, 101, 50, 0, 1, 2, 3, 4]
    );
    // 200, 100, 101 and 50 each overtook the older cold tasks; the cold
    // ones ran in order.
    assert_eq!(pool.stats().promoted, 4);
}

#[test]
fn equal_ranks_keep_nginx_fifo_and_count_no_promotion() {
    let pool = Pool::new("same", 1, 100).unwrap();
    let (release, blocker) = gate();
    let first = pool.submit_ranked(Lane::Normal, 7, blocker).unwrap();
    release.wait_started();
    let order = Arc::new(Mutex::new(Vec::new()));
    let done: Vec<_> = (0..10)
        .map(|i| {
            let order = Arc::clone(&order);
            pool.submit_ranked(Lane::Normal, 7, move || order.lock().unwrap().push(i))
                .unwrap()
        })
        .collect();
    release.open();
    first.wait_blocking().unwrap();
    for d in done {
        d.wait_blocking().unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    assert_eq!(pool.stats().promoted, 0);
}

#[test]
fn ranks_above_the_highest_are_clamped_and_count_against_max_queue() {
    let pool = Pool::new("clamp", 1, 2).unwrap();
    let (release, blocker) = gate();
    let first = pool.submit(blocker).unwrap();
    release.wait_started();
    let order = Arc::new(Mutex::new(Vec::new()));
    let push = |rank, i| {
        let order = Arc::clone(&order);
        pool.submit_ranked(Lane::Normal, rank, move || order.lock().unwrap().push(i))
    };
    let a = push(15, 1).unwrap();
    let b = push(u8::MAX, 2).unwrap();
    assert!(matches!(
        push(u8::MAX, 3),
        Err(SubmitError::Overflow { waiting: 2, .. })
    ));
    release.open();
    first.wait_blocking().unwrap();
    a.wait_blocking().unwrap();
    b.wait_blocking().unwrap();
    // u8::MAX is the top rank: FIFO with the other rank-15 task.
    assert_eq!(*order.lock().unwrap(), vec![1, 2]);
}

#[test]
fn cold_reads_wait_for_the_cold_limit_while_a_popular_read_takes_a_free_thread() {
    // Four threads; the cold limit starts at two.
    let pool = Pool::new("cold", 4, 100).unwrap();
    assert_eq!(pool.stats().cold_limit, cold::MIN_LIMIT as usize);
    let started = Arc::new(Mutex::new(Vec::new()));
    let cold_read = |i: usize| {
        let (release, hold) = gate();
        let started = Arc::clone(&started);
        let done = pool
            .submit_read(Lane::Normal, 1, move || {
                started.lock().unwrap().push(i);
                hold();
            })
            .unwrap();
        (release, done)
    };
    let reads: Vec<_> = (0..3).map(cold_read).collect();
    // Two run, the third waits although two threads are idle.
    let (release_popular, popular_hold) = gate();
    let popular = pool.submit_read(Lane::Normal, 15, popular_hold).unwrap();
    // A cold open (not a read of data) is not held either.
    let open = pool.submit_ranked(Lane::Normal, 1, || 7).unwrap();
    assert_eq!(open.wait_blocking().unwrap(), 7);
    reads[0].0.wait_started();
    reads[1].0.wait_started();
    release_popular.wait_started();
    assert_eq!(pool.stats().running, 3);
    assert_eq!(sorted(&started), vec![0, 1], "the third cold read waits");
    release_popular.open();
    popular.wait_blocking().unwrap();
    // The first cold read ends: the third may start.
    let mut reads = reads.into_iter();
    let (release0, done0) = reads.next().unwrap();
    release0.open();
    done0.wait_blocking().unwrap();
    let reads: Vec<_> = reads.collect();
    reads[1].0.wait_started();
    assert_eq!(sorted(&started), vec![0, 1, 2]);
    for (release, done) in reads {
        release.open();
        done.wait_blocking().unwrap();
    }
}
