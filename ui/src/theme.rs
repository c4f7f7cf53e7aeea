//! Colour themes: `themes/*.toml`, chosen by name with `--theme`.
//!
//! Panes never name a colour; they ask the [`Theme`] for a role (muted,
//! better, worse, …). Themes are looked up on disk first (so a user can add
//! or edit one) and fall back to the three built-in files embedded at
//! compile time, so an installed binary works without the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use libreyolo_core::error::{Error, Result};
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// The themes shipped with the binary.
const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

/// How many colours the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// `NO_COLOR`: no colour at all; emphasis by bold/reverse only.
    None,
    /// The 16 ANSI colours (the safe default over SSH).
    Ansi16,
    /// 256 indexed colours.
    Indexed,
    /// 24-bit colour (`COLORTERM=truecolor`).
    TrueColor,
}

impl Depth {
    /// Reads the usual environment conventions: `NO_COLOR` (any non-empty
    /// value), `COLORTERM`, `TERM`.
    pub fn from_env() -> Depth {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        if !var("NO_COLOR").is_empty() {
            return Depth::None;
        }
        let colorterm = var("COLORTERM").to_lowercase();
        if colorterm == "truecolor" || colorterm == "24bit" {
            Depth::TrueColor
        } else if var("TERM").contains("256") {
            Depth::Indexed
        } else {
            Depth::Ansi16
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: Option<String>,
    colors: BTreeMap<String, String>,
}

/// Colour roles. Every pane draws through these.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub depth: Depth,
    pub fg: Color,
    pub bg: Color,
    pub muted: Color,
    pub accent: Color,
    pub title: Color,
    pub border: Color,
    pub header: Color,
    pub selected_fg: Color,
    pub selected_bg: Color,
    pub better: Color,
    pub worse: Color,
    pub warn: Color,
    pub bar: Color,
}

const ROLES: &[&str] = &[
    "fg",
    "bg",
    "muted",
    "accent",
    "title",
    "border",
    "header",
    "selected_fg",
    "selected_bg",
    "better",
    "worse",
    "warn",
    "bar",
];

impl Theme {
    /// Loads the theme `name` for a terminal of the given depth. An unknown
    /// name is a usage error (exit 2) that lists the available themes.
    pub fn load(name: &str, depth: Depth) -> Result<Theme> {
        let text = match find_file(name) {
            Some(path) => std::fs::read_to_string(&path).map_err(|e| {
                Error::failed(format!("cannot read theme {}: {e}", path.display())).caused_by(e)
            })?,
            None => match BUILTIN.iter().find(|(n, _)| *n == name) {
                Some((_, t)) => (*t).to_string(),
                None => {
                    return Err(Error::usage(format!(
                        "unknown theme '{name}'. available: {}",
                        available().join(", ")
                    )));
                }
            },
        };
        Theme::parse(name, &text, depth)
    }

    /// Parses a theme file. Missing roles are an error, so a typo is caught
    /// when the theme is chosen rather than showing as a wrong colour.
    pub fn parse(name: &str, text: &str, depth: Depth) -> Result<Theme> {
        let bad = |m: String| Error::usage(format!("theme '{name}': {m}"));
        let file: ThemeFile = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
        for key in file.colors.keys() {
            if !ROLES.contains(&key.as_str()) {
                return Err(bad(format!(
                    "unknown colour role '{key}' (roles: {})",
                    ROLES.join(", ")
                )));
            }
        }
        let get = |role: &str| -> Result<Color> {
            let v = file.colors.get(role).ok_or_else(|| bad(format!("missing colour '{role}'")))?;
            let c = Color::from_str(v)
                .map_err(|_| bad(format!("'{v}' is not a colour (for '{role}')")))?;
            Ok(downgrade(c, depth))
        };
        Ok(Theme {
            name: file.name.unwrap_or_else(|| name.to_string()),
            depth,
            fg: get("fg")?,
            bg: get("bg")?,
            muted: get("muted")?,
            accent: get("accent")?,
            title: get("title")?,
            border: get("border")?,
            header: get("header")?,
            selected_fg: get("selected_fg")?,
            selected_bg: get("selected_bg")?,
            better: get("better")?,
            worse: get("worse")?,
            warn: get("warn")?,
            bar: get("bar")?,
        })
    }

    /// The built-in dark theme at a given depth (tests, benchmarks).
    pub fn builtin_dark(depth: Depth) -> Theme {
        Theme::parse("dark", BUILTIN[0].1, depth).expect("the built-in dark theme parses")
    }

    fn colored(&self) -> bool {
        self.depth != Depth::None
    }

    pub fn base(&self) -> Style {
        Style::default().fg(self.fg).bg(self.bg)
    }
    pub fn muted(&self) -> Style {
        if self.colored() {
            Style::default().fg(self.muted)
        } else {
            Style::default().add_modifier(Modifier::DIM)
        }
    }
    pub fn accent(&self) -> Style {
        Style::default().fg(self.accent).add_modifier(Modifier::BOLD)
    }
    pub fn title(&self) -> Style {
        Style::default().fg(self.title).add_modifier(Modifier::BOLD)
    }
    pub fn border(&self) -> Style {
        Style::default().fg(self.border)
    }
    pub fn header(&self) -> Style {
        Style::default().fg(self.header).add_modifier(Modifier::BOLD)
    }
    /// The selected row: reverse video without colour, so it stays visible.
    pub fn selected(&self) -> Style {
        if self.colored() {
            Style::default().fg(self.selected_fg).bg(self.selected_bg).add_modifier(Modifier::BOLD)
        } else {
            Style::default().add_modifier(Modifier::REVERSED)
        }
    }
    pub fn better(&self) -> Style {
        Style::default().fg(self.better)
    }
    pub fn worse(&self) -> Style {
        if self.colored() {
            Style::default().fg(self.worse)
        } else {
            Style::default().add_modifier(Modifier::BOLD)
        }
    }
    pub fn warn(&self) -> Style {
        Style::default().fg(self.warn).add_modifier(Modifier::BOLD)
    }
    pub fn bar(&self) -> Style {
        Style::default().fg(self.bar)
    }
}

/// Fits a colour to what the terminal can show. Without colour every role
/// becomes the terminal's default and styles fall back to modifiers.
fn downgrade(c: Color, depth: Depth) -> Color {
    match (depth, c) {
        (Depth::None, _) => Color::Reset,
        (Depth::TrueColor, c) => c,
        (Depth::Indexed, Color::Rgb(r, g, b)) => nearest16(r, g, b),
        (Depth::Ansi16, Color::Rgb(r, g, b)) => nearest16(r, g, b),
        (Depth::Ansi16, Color::Indexed(i)) if i >= 16 => {
            let (r, g, b) = indexed_rgb(i);
            nearest16(r, g, b)
        }
        (_, c) => c,
    }
}

/// The xterm palette of the 16 ANSI colours.
const ANSI16: &[(Color, (u8, u8, u8))] = &[
    (Color::Black, (0, 0, 0)),
    (Color::Red, (205, 0, 0)),
    (Color::Green, (0, 205, 0)),
    (Color::Yellow, (205, 205, 0)),
    (Color::Blue, (0, 0, 238)),
    (Color::Magenta, (205, 0, 205)),
    (Color::Cyan, (0, 205, 205)),
    (Color::Gray, (229, 229, 229)),
    (Color::DarkGray, (127, 127, 127)),
    (Color::LightRed, (255, 0, 0)),
    (Color::LightGreen, (0, 255, 0)),
    (Color::LightYellow, (255, 255, 0)),
    (Color::LightBlue, (92, 92, 255)),
    (Color::LightMagenta, (255, 0, 255)),
    (Color::LightCyan, (0, 255, 255)),
    (Color::White, (255, 255, 255)),
];

fn nearest16(r: u8, g: u8, b: u8) -> Color {
    let d = |(x, y, z): (u8, u8, u8)| {
        let (dr, dg, db) =
            (i32::from(r) - i32::from(x), i32::from(g) - i32::from(y), i32::from(b) - i32::from(z));
        dr * dr + dg * dg + db * db
    };
    ANSI16.iter().min_by_key(|(_, rgb)| d(*rgb)).map_or(Color::Reset, |(c, _)| *c)
}

/// RGB of an xterm 256-colour index (cube and grey ramp).
fn indexed_rgb(i: u8) -> (u8, u8, u8) {
    if i >= 232 {
        let v = 8 + (i - 232) * 10;
        return (v, v, v);
    }
    let i = i - 16;
    let level = |n: u8| if n == 0 { 0 } else { 55 + n * 40 };
    (level(i / 36), level((i / 6) % 6), level(i % 6))
}

/// Folders searched for `<name>.toml`, most specific first: beside the
/// executable (and its ancestors, which covers `target/debug/`), the source
/// tree it was built from, and the working directory.
pub fn theme_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Ok(env) = std::env::var("LIBREYOLO_THEMES") {
        dirs.push(PathBuf::from(env));
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1).take(4) {
            dirs.push(dir.join("themes"));
            dirs.push(dir.join("share/libreyolo/themes"));
        }
    }
    dirs.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../themes"));
    if let Ok(cwd) = std::env::current_dir() {
        dirs.push(cwd.join("themes"));
    }
    dirs
}

fn find_file(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains(['/', '\\']) || name.starts_with('.') {
        return None;
    }
    theme_dirs().into_iter().map(|d| d.join(format!("{name}.toml"))).find(|p| p.is_file())
}

/// Every theme name on disk or built in, sorted.
pub fn available() -> Vec<String> {
    let mut names: Vec<String> = BUILTIN.iter().map(|(n, _)| (*n).to_string()).collect();
    for dir in theme_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "toml") {
                if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                    names.push(stem.to_string());
                }
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_themes_parse_at_every_depth() {
        for (name, _) in BUILTIN {
            for depth in [Depth::None, Depth::Ansi16, Depth::Indexed, Depth::TrueColor] {
                let t = Theme::load(name, depth).unwrap();
                assert_eq!(t.name, *name);
            }
        }
    }

    #[test]
    fn unknown_theme_is_a_usage_error_listing_the_available_ones() {
        let e = Theme::load("solarized-neon", Depth::Ansi16).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("unknown theme 'solarized-neon'"), "{msg}");
        for n in ["dark", "light", "high-contrast"] {
            assert!(msg.contains(n), "{msg}");
        }
        // A path is not a theme name.
        assert_eq!(Theme::load("../themes/dark", Depth::Ansi16).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn sixteen_colour_fallback_and_no_color() {
        let light = Theme::load("light", Depth::Ansi16).unwrap();
        // "#b35900" has no ANSI name: it becomes one of the 16.
        assert!(ANSI16.iter().any(|(c, _)| *c == light.warn), "{:?}", light.warn);
        let tc = Theme::load("light", Depth::TrueColor).unwrap();
        assert_eq!(tc.warn, Color::Rgb(0xb3, 0x59, 0x00));
        let none = Theme::load("dark", Depth::None).unwrap();
        assert_eq!(none.accent, Color::Reset);
        assert!(none.selected().add_modifier.contains(Modifier::REVERSED));
        assert_eq!(downgrade(Color::Indexed(196), Depth::Ansi16), Color::LightRed);
    }

    #[test]
    fn bad_theme_files_are_reported() {
        assert!(Theme::parse("x", "name='x'\n[colors]\nfg='nope'", Depth::Ansi16).is_err());
        assert!(
            Theme::parse("x", "[colors]\nfg='red'", Depth::Ansi16)
                .unwrap_err()
                .to_string()
                .contains("missing colour")
        );
        assert!(
            Theme::parse("x", "[colors]\nfgg='red'", Depth::Ansi16)
                .unwrap_err()
                .to_string()
                .contains("unknown colour role")
        );
    }
}
