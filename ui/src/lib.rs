//! `libreyolo profile explore`: a terminal explorer over one profile, or two
//! for comparison. It renders the same lens results as the reader commands
//! (`summary`, `phases`, `kernels`, `ops`, `compare`, `what-if`); no figure
//! is computed here.
//!
//! Shape: [`app::App`] holds the state, [`input`] maps keys to actions,
//! [`panes`] draws one pane per module, [`theme`] turns `themes/*.toml` into
//! colour roles. Profiles load on background threads that report over a
//! channel, so the screen keeps drawing (with progress) while a large trace
//! is analysed, and a changed file is reloaded the same way.

pub mod app;
pub mod input;
pub mod pane;
pub mod panes;
pub mod theme;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{self, Event};
use libreyolo_core::cli::ExploreArgs;
use libreyolo_core::error::{Error, Result};
use libreyolo_core::profile::{self, Input};
use ratatui::DefaultTerminal;

use app::{App, Loading, Side};
use theme::{Depth, Theme};

/// How often the loop wakes without input (progress, channel, file watch).
const TICK: Duration = Duration::from_millis(100);
/// The same while a load or a filter runs in the background.
const BUSY_TICK: Duration = Duration::from_millis(8);
/// How often the loading screen's progress is redrawn.
const PROGRESS_EVERY: Duration = Duration::from_millis(50);
/// How often the profiles' modification times are checked.
const WATCH: Duration = Duration::from_secs(1);

/// Runs the explorer until the user quits.
///
/// Everything that can be checked before the screen changes is checked
/// first: the theme, the paths, and that stdout is a terminal (all usage
/// errors, exit 2). The terminal is restored on return, on error and on a
/// panic (ratatui's panic hook).
pub fn run(args: &ExploreArgs) -> Result<()> {
    let theme = Theme::load(&args.theme, Depth::from_env())?;
    profile::resolve_input(&args.trace)?;
    if let Some(o) = &args.other {
        profile::resolve_input(o)?;
    }
    if !std::io::stdout().is_terminal() {
        return Err(Error::usage(
            "the explorer needs a terminal, and stdout is not one. For output a script can read, use \
             `libreyolo profile summary|phases|kernels|ops|compare|what-if` (add --json)",
        ));
    }
    let mut app = App::new(theme, &args.trace, args.other.as_deref());
    app.worker = Some(app::Worker::spawn());
    let mut terminal = ratatui::try_init().map_err(|e| Error::failed(format!("cannot set up the terminal: {e}")))?;
    // ratatui's hook restores the terminal; a panic in a loader thread is
    // caught and shown as a failed load instead, so it must not.
    let restore_and_report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().name() == Some("main") {
            restore_and_report(info);
        }
    }));
    let result = event_loop(&mut terminal, &mut app);
    ratatui::restore();
    result?;
    match (&app.main.data, &app.main.error) {
        (None, Some(e)) => Err(Error::failed(e.clone())),
        _ => Ok(()),
    }
}

type Done = (Side, u64, Result<Input>);

fn event_loop(terminal: &mut DefaultTerminal, app: &mut App) -> Result<()> {
    let io = |e: std::io::Error| Error::failed(format!("terminal: {e}"));
    let (tx, rx): (Sender<Done>, Receiver<Done>) = mpsc::channel();
    let mut next_id = 0u64;
    let mut dirty = true;
    let mut watched = Instant::now();
    let mut drawn = Instant::now();
    loop {
        for (side, arg) in std::mem::take(&mut app.requests) {
            next_id += 1;
            let reload = app.slot(side).data.is_some();
            app.loading(side, start_load(side, next_id, arg, reload, &tx));
            dirty = true;
        }
        // Progress is redrawn a few times a second; anything else at once.
        let busy = app.is_loading() || app.kernels.pending.is_some();
        if dirty || (busy && drawn.elapsed() >= PROGRESS_EVERY) {
            app.poll_progress();
            terminal.draw(|f| panes::draw(f, app)).map_err(io)?;
            drawn = Instant::now();
            dirty = false;
        }
        if app.quit {
            return Ok(());
        }
        // Take every queued event before drawing again, so held keys never lag.
        // While work is running in the background, wake often enough that
        // its answer shows within a frame.
        let mut timeout = if busy { BUSY_TICK } else { TICK };
        while event::poll(timeout).map_err(io)? {
            match event::read().map_err(io)? {
                Event::Key(k) => app.handle_key(k),
                Event::Resize(..) => {}
                _ => continue,
            }
            dirty = true;
            timeout = Duration::ZERO;
            if app.quit {
                break;
            }
        }
        dirty |= app.poll_worker();
        while let Ok((side, id, result)) = rx.try_recv() {
            if app.slot(side).loading.as_ref().is_some_and(|l| l.id == id) {
                app.loaded(side, result);
                dirty = true;
            }
        }
        if watched.elapsed() >= WATCH {
            watched = Instant::now();
            app.requests.extend(app.changed_on_disk());
        }
    }
}

/// Loads `arg` on a new thread; the result arrives on `tx`.
fn start_load(side: Side, id: u64, arg: String, reload: bool, tx: &Sender<Done>) -> Loading {
    let size = profile::resolve_input(&arg).ok().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len());
    let io: Arc<Mutex<Option<PathBuf>>> = Arc::default();
    let io_thread = Arc::clone(&io);
    let tx = tx.clone();
    std::thread::spawn(move || {
        // Linux names this thread's I/O counters; the screen reads them.
        if let Ok(me) = std::fs::read_link("/proc/thread-self") {
            if let Ok(mut slot) = io_thread.lock() {
                *slot = Some(PathBuf::from("/proc").join(me).join("io"));
            }
        }
        let result = std::panic::catch_unwind(|| profile::load(&arg, false))
            .unwrap_or_else(|_| Err(Error::failed(format!("the analysis of {arg} crashed"))));
        let _ = tx.send((side, id, result));
    });
    Loading { id, started: Instant::now(), size, read: None, io, reload }
}
