//! `make compare-parser REV=<rev>`: the core crate's JSON parser as it is
//! now against REV's, both linked into this one program (REV's under
//! another version number), on the messages of the decoding rows of
//! `make bench`, one file a row, a message a line. After a pass of each
//! to warm up, which checks that the two agree, each pass parses a row's
//! messages with both versions, which first alternating, with a builder
//! that only adds up the lengths of the strings, so that the time is the
//! parser's: its strings, numbers and structure, without the BEAM.
//!
//! `bench/compare_parser.sh` writes the files and this program's
//! manifest. `PASSES` (41) sets the passes a row; `MCP_FRAMER_ISA` applies
//! to both versions, where REV has it.

macro_rules! parser {
    ($version:ident) => {
        mod $version {
            use $version::json::{self, Builder, Text};

            /// Adds up the lengths of the strings, keys and values alike.
            struct Lengths(usize);

            impl<'de> Builder<'de> for Lengths {
                type Value = usize;
                type Error = ();
                fn null(&mut self) -> Result<(), ()> {
                    Ok(())
                }
                fn bool(&mut self, _: bool) -> Result<(), ()> {
                    Ok(())
                }
                fn integer(&mut self, _: i64) -> Result<(), ()> {
                    Ok(())
                }
                fn big_integer(&mut self, _: &'de str) -> Result<(), ()> {
                    Ok(())
                }
                fn float(&mut self, _: f64) -> Result<(), ()> {
                    Ok(())
                }
                fn string(&mut self, text: Text<'de, '_>) -> Result<(), ()> {
                    self.0 += text.as_str().len();
                    Ok(())
                }
                fn end_array(&mut self, _: usize) -> Result<(), ()> {
                    Ok(())
                }
                fn key(&mut self, text: Text<'de, '_>) -> Result<(), ()> {
                    self.0 += text.as_str().len();
                    Ok(())
                }
                fn end_object(&mut self, _: usize) -> Result<(), ()> {
                    Ok(())
                }
                fn finish(&mut self) -> Result<usize, ()> {
                    Ok(self.0)
                }
            }

            /// The time to parse every message, and the length of their
            /// strings; a message that fails to parse ends the program.
            pub fn pass(messages: &[&[u8]]) -> (f64, usize) {
                let mut parser = json::Parser::default();
                let started = std::time::Instant::now();
                let mut total = 0;
                for message in messages {
                    match parser.parse(message, &mut Lengths(0)) {
                        Ok(length) => total += length,
                        Err(error) => panic!("a message does not parse: {error:?}"),
                    }
                }
                (started.elapsed().as_secs_f64(), total)
            }
        }
    };
}

parser!(then);
parser!(now);

fn main() {
    let mut args = std::env::args().skip(1);
    let rev = args
        .next()
        .expect("usage: compare_parser <rev> <row.jsonl>...");
    let passes: usize = match std::env::var("PASSES") {
        Ok(passes) => passes.parse().expect("PASSES is a count"),
        Err(_) => 41,
    };
    assert!(passes > 0, "PASSES is at least 1");
    println!(
        "The parser now against {rev}'s, {passes} passes a row after one of each to warm up, \
         which first alternating, in one process"
    );
    println!("ratio = {rev} time / time now: above 1.00x, now is faster\n");
    println!("| row | {rev} MB/s | now MB/s | ratio, best passes | ratio, median pair |");
    println!("|---|---:|---:|---:|---:|");
    for file in args {
        let data = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        let messages: Vec<&[u8]> = data
            .split(|&b| b == b'\n')
            .filter(|m| !m.is_empty())
            .collect();
        let (mut best_then, mut best_now) = (f64::MAX, f64::MAX);
        let mut ratios = Vec::with_capacity(passes);
        let (_, total_then) = then::pass(&messages);
        let (_, total_now) = now::pass(&messages);
        assert_eq!(
            total_then, total_now,
            "{file}: the versions' strings differ"
        );
        for pass in 0..passes {
            let (time_then, time_now) = if pass % 2 == 0 {
                (then::pass(&messages).0, now::pass(&messages).0)
            } else {
                let time_now = now::pass(&messages).0;
                (then::pass(&messages).0, time_now)
            };
            best_then = best_then.min(time_then);
            best_now = best_now.min(time_now);
            ratios.push(time_then / time_now);
        }
        ratios.sort_by(f64::total_cmp);
        let rate = |time: f64| data.len() as f64 / time / 1e6;
        let row = std::path::Path::new(&file)
            .file_stem()
            .map_or(file.clone(), |s| s.to_string_lossy().into_owned());
        println!(
            "| {row} | {:.0} | {:.0} | {:.2}x | {:.2}x |",
            rate(best_then),
            rate(best_now),
            best_then / best_now,
            ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
        );
    }
}
