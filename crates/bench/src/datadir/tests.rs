//! Tests of the workload file: what `bench` writes, what `recover` reads.

use super::*;

fn parse(text: &str) -> Result<Recorded, String> {
    Recorded::parse(PathBuf::from("d/workload"), text)
}

#[test]
fn the_workload_file_round_trips_and_stays_readable() {
    let dir = std::env::temp_dir().join(format!("mv-recover-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let params = [("warehouses", Param::Int(3)), ("mix", Param::Str("a:50,b:50".into())), ("x", Param::Bool(true))];
    record_workload(&dir, "tpcc", &params).unwrap();
    let text = std::fs::read_to_string(dir.join(WORKLOAD_FILE)).unwrap();
    assert!(text.contains("\nworkload=tpcc\nwarehouses=3\nmix=a:50,b:50\nx=true\nload=started\n"), "{text}");
    let r = Recorded::read(&dir).unwrap().unwrap();
    assert_eq!(r.load, Some(Load::Started));
    record_loaded(&dir).unwrap();
    let done = Recorded::read(&dir).unwrap().unwrap();
    assert!(record_loaded(&dir).unwrap_err().contains("no load=started line"));
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(left, [WORKLOAD_FILE], "no temporary file is left");
    assert_eq!(done, Recorded { load: Some(Load::Finished), ..r });
    assert_eq!(done.workload, "tpcc");
    assert_eq!(done.params.len(), 3, "load= is not a parameter");
    assert_eq!(done.need::<u32>("warehouses"), Ok(3));
    assert_eq!(done.get("x", false), Ok(true));
    assert_eq!(done.get("absent", 7u32), Ok(7));
}

#[test]
fn old_and_bad_workload_files() {
    let r = parse("smallbank\n").unwrap();
    assert_eq!((r.workload.as_str(), r.described, r.load), ("smallbank", false, None));
    assert!(parse("nosuch\n").unwrap_err().contains("unknown workload 'nosuch'"));
    assert!(parse("workload=sibench\n").unwrap().described, "sibench's rows= is missing, not the file's format");
    assert_eq!(parse("workload=tpcc\nwarehouses=1\n").unwrap().load, None, "before load= was written");
    assert!(parse("workload=tpcc\nwarehouses\n").unwrap_err().contains("line 2: 'warehouses' is not key=value"));
    assert!(parse("warehouses=1\n").unwrap_err().contains("no workload= line"));
    assert!(parse("workload=\n").unwrap_err().contains("workload= names no workload"));
    assert!(parse("workload=tpcc\nworkload=ycsb\n").unwrap_err().contains("workload is given twice"));
    assert!(parse("workload=tpcc\nload=half\n").unwrap_err().contains("load=half is neither started nor finished"));
    let r = parse("workload=tpcc\nwarehouses=many\n").unwrap();
    assert!(r.need::<u32>("warehouses").unwrap_err().contains("warehouses=many is not a valid value"));
    assert!(r.need::<u64>("rows").unwrap_err().contains("no rows= line"));
    // Messages stay one short line whatever the file holds.
    let long = format!("workload=tpcc\n{}\n", "x\u{7}".repeat(1000));
    let e = parse(&long).unwrap_err();
    assert!(e.len() < 120 && e.contains("x\\u{7}x") && e.contains("...'"), "{e}");
}

#[test]
fn quoting() {
    assert_eq!(quote("plain"), "plain");
    assert_eq!(quote("a\tb\r"), "a\\tb\\r");
    assert_eq!(quote(&"y".repeat(60)), "y".repeat(60));
    assert_eq!(quote(&"y".repeat(61)), format!("{}...", "y".repeat(60)));
    assert_eq!(quote(&"\u{1}".repeat(20)), format!("{}...", "\\u{1}".repeat(12)));
}
