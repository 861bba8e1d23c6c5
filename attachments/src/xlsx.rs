//! Excel workbooks: each worksheet as a `## Sheet name` heading, then one line per row with the
//! cells separated by tabs.
//!
//! Cells are streamed one at a time and only the non-empty ones cost anything; a worksheet's
//! declared or implied bounding box is never materialised.

use std::io::Cursor;

use calamine::{Data, ExcelDateTime, Reader, SheetType, Xlsx};

use crate::sink::Sink;
use crate::{zipguard, AttachmentError, Kind, Limits};

type Workbook<'a> = Xlsx<Cursor<&'a [u8]>>;

pub(crate) fn extract(bytes: &[u8], limits: &Limits, sink: &mut Sink) -> Result<(), AttachmentError> {
    // Only the checks are wanted here: calamine opens the archive itself, and reads the parts
    // that were just measured.
    zipguard::open(Kind::Xlsx, bytes, limits)?;
    let mut workbook: Workbook<'_> = Xlsx::new(Cursor::new(bytes)).map_err(damaged)?;
    // Chart, dialog and macro sheets have no cell data and would not parse as worksheets.
    let sheets: Vec<String> = workbook
        .sheets_metadata()
        .iter()
        .filter(|sheet| sheet.typ == SheetType::WorkSheet)
        .map(|sheet| sheet.name.clone())
        .collect();
    for name in sheets {
        if sink.is_truncated() {
            break;
        }
        sink.paragraph_break();
        sink.push_str("## ");
        sink.push_str(&name);
        sink.line_break();
        read_sheet(&mut workbook, &name, sink)?;
    }
    Ok(())
}

fn read_sheet(workbook: &mut Workbook<'_>, name: &str, sink: &mut Sink) -> Result<(), AttachmentError> {
    let mut cells = workbook.worksheet_cells_reader(name).map_err(damaged)?;
    let first_column = cells.dimensions().start.1;
    let mut position: Option<(u32, u32)> = None;
    while let Some(cell) = cells.next_cell().map_err(damaged)? {
        if sink.is_truncated() {
            break;
        }
        let value = Data::from(cell.get_value().clone());
        if value == Data::Empty {
            continue;
        }
        let (row, column) = cell.get_position();
        let tabs = match position {
            Some((last_row, last_column)) if last_row == row => column.saturating_sub(last_column).max(1),
            Some(_) => {
                sink.line_break();
                column.saturating_sub(first_column)
            }
            None => column.saturating_sub(first_column),
        };
        push_tabs(tabs, sink);
        push_cell(&value, sink);
        position = Some((row, column));
    }
    Ok(())
}

/// One tab per column moved, so empty cells keep later cells in their columns.
fn push_tabs(count: u32, sink: &mut Sink) {
    for _ in 0..count {
        // A full sink drops tabs without counting them as lost text, so stop here or a sheet
        // of far-apart cells would spin through billions of them.
        if sink.is_full() {
            return;
        }
        sink.tab();
    }
}

/// Line breaks and tabs inside a cell would be read as new rows and columns.
fn push_cell(value: &Data, sink: &mut Sink) {
    let text = match value {
        Data::DateTime(datetime) if datetime.is_datetime() => format_datetime(datetime),
        other => other.to_string(),
    };
    let flat: String = text.chars().map(|c| if c == '\t' || c == '\n' || c == '\r' { ' ' } else { c }).collect();
    sink.push_str(flat.trim());
}

/// Excel stores dates as day counts; without this the model would read "46143" for 2026-05-01.
/// (calamine's own formatting needs its chrono feature, a dependency this saves.)
fn format_datetime(datetime: &ExcelDateTime) -> String {
    let (year, month, day, hour, minute, second, _) = datetime.to_ymd_hms_milli();
    let date = format!("{year:04}-{month:02}-{day:02}");
    let time = format!("{hour:02}:{minute:02}:{second:02}");
    let has_time = (hour, minute, second) != (0, 0, 0);
    match (datetime.as_f64() >= 1.0, has_time) {
        (true, false) => date,
        (false, true) => time,
        _ => format!("{date} {time}"),
    }
}

fn damaged(error: calamine::XlsxError) -> AttachmentError {
    AttachmentError::damaged(Kind::Xlsx, error)
}
