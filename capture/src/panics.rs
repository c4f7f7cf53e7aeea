//! libtorch failures that tch turns into panics, as one line each.
//!
//! tch turns a libtorch failure it did not expect (an allocation of a
//! `--batch 1024 --imgsz 4096` batch the machine cannot give, say) into a
//! panic. The hook [`install`] sets keeps the first panic's sentence instead
//! of printing a backtrace; the executable reports it as any runtime failure
//! (one line, exit 1), and code that catches a panic it expects (the
//! `--batch -1` check running out of CUDA memory) [`take`]s it back.

use std::sync::Mutex;

/// The first panic's sentence since the last [`take`].
static FIRST: Mutex<Option<String>> = Mutex::new(None);

/// Makes every panic keep its sentence (the first one wins) and print
/// nothing.
pub fn install() {
    std::panic::set_hook(Box::new(|info| {
        let msg = message(info.payload());
        let at =
            info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut p) = FIRST.lock() {
            p.get_or_insert_with(|| sentence(msg, &at));
        }
    }));
}

/// The sentence of the first panic since the last call, forgotten here.
pub fn take() -> Option<String> {
    FIRST.lock().ok().and_then(|mut p| p.take())
}

/// The text a panic carries (`panic!`'s message, tch's `Torch(...)`).
pub fn message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("no message")
}

/// A panic in one line: libtorch's own first line when tch carries one
/// (`Torch("DefaultCPUAllocator: can't allocate memory: ...\nException
/// raised from ...")`), else the message and where (a bug to report).
pub fn sentence(msg: &str, at: &str) -> String {
    if let Some(i) = msg.find("Torch(\"") {
        let torch = &msg[i + 7..];
        let first = torch.split("\\n").next().unwrap_or(torch).split('\n').next().unwrap_or(torch);
        return format!("libtorch failed: {}", first.trim_end_matches("\")").trim_end_matches('"'));
    }
    let first = msg.lines().next().unwrap_or(msg);
    format!("internal error{at}: {first} (a bug: please report it)")
}

#[cfg(test)]
mod tests {
    use super::sentence;

    #[test]
    fn a_tch_panic_is_libtorch_s_first_line() {
        let msg = "called `Result::unwrap()` on an `Err` value: Torch(\"DefaultCPUAllocator: can't allocate memory: you tried to allocate 491520000000 bytes. Error code 12 (Cannot allocate memory)\\nException raised from malloc at c10/core/impl/alloc_cpu.cpp:124 (most recent call first):\\nframe #0: ...\")";
        assert_eq!(
            sentence(msg, " at x.rs:1"),
            "libtorch failed: DefaultCPUAllocator: can't allocate memory: you tried to allocate 491520000000 bytes. Error code 12 (Cannot allocate memory)"
        );
        assert_eq!(
            sentence("index out of bounds\nmore", " at a.rs:3"),
            "internal error at a.rs:3: index out of bounds (a bug: please report it)"
        );
    }
}
