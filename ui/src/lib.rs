//! `libreyolo profile explore`: a terminal explorer over one profile, or two
//! for comparison. It renders the same lens results as the reader commands
//! (`summary`, `phases`, `kernels`, `ops`, `compare`, `what-if`); no figure
//! is computed here.
//!
//! Shape: [`app::App`] holds the shared state and the panes, `background`
//! its threads (kernels filter, timeline steps), [`input`] maps keys to
//! actions, [`pane`] names the panes, [`panes`] has one module per pane
//! (its state, key handling and drawing) and their table, [`view`] the one
//! contract every pane implements ([`view::Component`]: `update` with a
//! [`view::Ctx`] returning a [`view::Effect`], `render` from a
//! [`view::View`]), [`slot`] and [`editor`] the state panes and app share,
//! [`screen`] the frame around the pane, [`theme`] turns `themes/*.toml`
//! into colour roles. The panes import only the leaf modules (`view`,
//! `slot`, `editor`, `job`, `input`, `pane`, `theme`), never `app`. The event loop runs on a single-threaded tokio
//! runtime and sleeps in one `select!` until something happens: a key, a
//! profile loaded on a background thread, the kernels filter's answer, a
//! timeline step read, a change to a shown file (a `notify` watcher on its
//! folder), SIGTERM/SIGHUP (which quit cleanly, restoring the terminal),
//! or, only while a load runs, the progress timer.

pub mod app;
mod background;
pub mod editor;
pub mod input;
pub mod job;
pub mod pane;
pub mod panes;
pub mod screen;
pub mod slot;
pub mod theme;
pub mod view;
mod watch;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;
use libreyolo_core::cli::ExploreArgs;
use libreyolo_core::error::{Error, Result};
use libreyolo_core::input::{Chosen, LoadOptions, Reads, load, resolve_input, what};
use libreyolo_core::trace::input::ProgressBar;
use libreyolo_core::trace::{Progress, ReadOptions};
use ratatui::DefaultTerminal;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use app::{App, Opened};
use job::{OpenJob, Opening};
use slot::{Loading, Side};
use theme::{Depth, Theme};

/// How often the loading screen's progress is redrawn while a load runs.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);
/// How long file changes settle before a reload (a writer's several events).
const SETTLE: Duration = Duration::from_millis(150);

/// Runs the explorer until the user quits.
///
/// Everything that can be checked before the screen changes is checked
/// first: the theme, the paths, and that stdout is a terminal (all usage
/// errors, exit 2). The terminal is restored on return, on error and on a
/// panic (ratatui's panic hook).
pub fn run(args: &ExploreArgs, read: &ReadOptions) -> Result<()> {
    let theme = Theme::load(&args.theme, Depth::from_env())?;
    let opening = match args.rank {
        // One rank of a job, as every reader's `--rank` picks it.
        Some(n) => {
            let (chosen, notes) = what(&args.traces)?.choose(Some(n), Reads::Job)?;
            for note in notes {
                eprintln!("note: {note}");
            }
            match chosen {
                Chosen::One(main) => Opening::Profile { main, other: None },
                Chosen::Job(_) => unreachable!("--rank picks one rank's file"),
            }
        }
        None => job::opening(&args.traces)?,
    };
    if !std::io::stdout().is_terminal() {
        return Err(Error::usage(
            "the explorer needs a terminal, and stdout is not one. For output a script can read, use \
             `libreyolo profile summary|phases|kernels|ops|compare|what-if` (add --json)",
        ));
    }
    let mut app = match opening {
        Opening::Profile { main, other } => App::new(theme, &main, other.as_deref()),
        Opening::Job { arg, files } => App::for_job(theme, &arg, files),
    };
    app.read = read.clone();
    app.worker = Some(app::Worker::spawn());
    app.steps = Some(app::StepLoader::spawn());
    let mut terminal = ratatui::try_init()
        .map_err(|e| Error::failed(format!("cannot set up the terminal: {e}")).caused_by(e))?;
    // ratatui's hook restores the terminal; a panic in a loader thread is
    // caught and shown as a failed load instead, so it must not.
    let restore_and_report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("main") {
            restore_and_report(info);
        }
    }));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::failed(format!("cannot start the event loop: {e}")).caused_by(e));
    let result = runtime.and_then(|rt| rt.block_on(event_loop(&mut terminal, &mut app)));
    ratatui::restore();
    result?;
    match (&app.main.data, &app.main.error) {
        (None, Some(e)) => Err(Error::failed(e.clone())),
        _ => Ok(()),
    }
}

type Done = (Side, u64, Result<Opened>);

async fn event_loop(terminal: &mut DefaultTerminal, app: &mut App) -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let io = |e: std::io::Error| Error::failed(format!("terminal: {e}"));
    let (tx, mut loaded) = unbounded_channel::<Done>();
    let (changes_tx, mut changes) = unbounded_channel::<()>();
    let mut watcher = watch::Watcher::new(changes_tx);
    let mut keys = EventStream::new();
    let mut terminate = signal(SignalKind::terminate()).map_err(io)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(io)?;
    let worker = app.worker.as_ref().map(|w| Arc::clone(w.answered())).unwrap_or_default();
    let steps = app.steps.as_ref().map(|l| Arc::clone(&l.answered)).unwrap_or_default();
    let mut progress = tokio::time::interval(PROGRESS_EVERY);
    progress.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut reload_at: Option<tokio::time::Instant> = None;
    let mut next_id = 0u64;
    let mut dirty = true;
    if let Ok(size) = terminal.size() {
        app.resize(size.width, size.height);
    }
    loop {
        for (side, arg) in std::mem::take(&mut app.requests) {
            next_id += 1;
            let reload = app.slot(side).data.is_some();
            let ranks = app.slot(side).ranks.clone();
            app.loading(side, start_load(side, next_id, (arg, ranks), reload, &app.read, &tx));
            dirty = true;
        }
        if dirty {
            terminal.draw(|f| screen::draw(f, app)).map_err(io)?;
            dirty = false;
        }
        if app.quit {
            return Ok(());
        }
        let loading = app.is_loading();
        let settle = async {
            match reload_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = keys.next() => match event {
                Some(Ok(Event::Key(k))) => {
                    // One frame per key: a frame takes about a millisecond,
                    // far less than a held key's repeat. (Draining queued keys
                    // with a no-op waker would leave EventStream's wake-up
                    // on that waker, and the loop asleep.)
                    app.handle_key(k);
                    dirty = true;
                }
                Some(Ok(Event::Resize(w, h))) => {
                    app.resize(w, h);
                    dirty = true;
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(io(e)),
                None => return Ok(()),
            },
            Some((side, id, result)) = loaded.recv() => {
                if app.slot(side).loading.as_ref().is_some_and(|l| l.id == id) {
                    app.opened(side, result);
                    watcher.watch(&app.watched_files());
                    dirty = true;
                }
            }
            () = worker.notified() => dirty |= app.poll_worker(),
            () = steps.notified() => dirty |= app.poll_steps(),
            Some(()) = changes.recv() => reload_at = Some(tokio::time::Instant::now() + SETTLE),
            () = settle => {
                reload_at = None;
                app.requests.extend(app.changed_on_disk());
            }
            _ = progress.tick(), if loading => dirty = true,
            _ = terminate.recv() => app.quit = true,
            _ = hangup.recv() => app.quit = true,
        }
    }
}

/// Loads `arg` on a new thread (a job's `ranks` when there are some, each
/// read once); the result arrives on `tx`.
fn start_load(
    side: Side,
    id: u64,
    (arg, ranks): (PathBuf, Vec<PathBuf>),
    reload: bool,
    read: &ReadOptions,
    tx: &UnboundedSender<Done>,
) -> Loading {
    if !ranks.is_empty() {
        let size = ranks.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
        let done = Arc::new(AtomicUsize::new(0));
        let (counter, total, tx) = (Arc::clone(&done), ranks.len(), tx.clone());
        let read = read.clone();
        std::thread::spawn(move || {
            let result = std::panic::catch_unwind(|| OpenJob::read(&ranks, &counter, &read))
                .unwrap_or_else(|_| Err(crashed(&arg)));
            let _ = tx.send((side, id, result.map(|j| Opened::Job(Box::new(j)))));
        });
        return Loading {
            id,
            started: Instant::now(),
            size: Some(size),
            bar: None,
            reload,
            ranks: Some((done, total)),
        };
    }
    let size = resolve_input(&arg).ok().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len());
    // The reader moves this bar as it goes (bytes of the file; for gzip,
    // compressed bytes), on whichever thread reads or inflates the file.
    let bar = ProgressBar::hidden();
    let tx = tx.clone();
    // The Timeline's index is built in the same pass as the lenses.
    let opts = LoadOptions {
        read: read.with_progress(Progress::To(bar.clone())),
        timeline_index: true,
        keep_model: true,
        ..Default::default()
    };
    std::thread::spawn(move || {
        let result =
            std::panic::catch_unwind(|| load(&arg, opts)).unwrap_or_else(|_| Err(crashed(&arg)));
        let opened = result.map(|l| {
            Opened::Profile(Box::new(l.input), l.index.map(Arc::new), l.model.map(Arc::new))
        });
        let _ = tx.send((side, id, opened));
    });
    Loading { id, started: Instant::now(), size, bar: Some(bar), reload, ranks: None }
}

/// A loader thread that panicked, said as a failed load.
fn crashed(arg: &Path) -> Error {
    Error::failed(format!("the analysis of {} crashed", arg.display()))
}
