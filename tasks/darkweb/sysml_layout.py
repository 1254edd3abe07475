"""Reading the layout SYSML (Maneriker et al., EMNLP 2021) released its darkweb data in.

One folder per market (or the data folder itself, for one market):

```
<market>/train.csv, <market>/test.csv       one row per post; columns cleaned_post, Date, subforum, market
<market>/episodes/len_<L>.json              {"train": {author: [[row, ...], ...]}, "test": {...}}
matches.csv (optional, beside the markets)  uid1, market1, uid2, market2, match: accounts of one person
```

Rows are numbered from 0 in file order (what SYSML's `df.iloc[i]` reads); -1 pads a short episode.
The posts are already pre-processed (`cleaned_post`) and split in time, and the episodes file
names the active users, so none of that is redone here. Optional columns `author`, `thread_id`,
`post_id`, `parent_id` and `kind` give the user/thread/post graph for metapath2vec (without `kind`,
a thread's earliest post counts as the one that started it); without `author` and `thread_id` a
market has no graph. `thread_id` also gives each episode post its thread, which the default
(thread-disjoint) evaluation protocol needs; without it, only protocol="legacy" can score the data.

Not read: a `subforum.json` beside the csv files (a file of SYSML's release, for its own sub-forum
indexing and embedding initialisation). The sub-forum of a post is the csv's `subforum` column;
the systems index sub-forums themselves, and nbcsauthor/sysml compute their own metapath2vec
initialisation from the graph columns above (random initialisation where a market has no graph),
from the training split's posts only, so no vector computed on test-period posts enters training.
"""

from __future__ import annotations

import csv
import io
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from core.errors import DataError
from core.files import parse_json
from tasks.darkweb.records import Episode, EpisodePost
from tasks.forum.records import ForumPost

REQUIRED_COLUMNS = ("cleaned_post", "Date", "subforum", "market")
MATCHES_NAME = "matches.csv"


class MarketSplit(NamedTuple):
    market: str
    episodes: list[Episode]
    posts: list[ForumPost]  # empty where the csv has no author and thread columns
    files: list[Path]


def is_sysml_layout(data_dir: Path) -> bool:
    """Whether a folder holds SYSML's layout (a train.csv in it or in a sub-folder)."""
    data_dir = Path(data_dir)
    return data_dir.is_dir() and bool(market_dirs(data_dir))


def market_dirs(data_dir: Path) -> list[Path]:
    """The market folders: the folder itself when it has train.csv, else its sub-folders that do."""
    data_dir = Path(data_dir)
    if (data_dir / "train.csv").is_file():
        return [data_dir]
    return sorted(d for d in data_dir.iterdir() if d.is_dir() and (d / "train.csv").is_file())


def read_market_split(market_dir: Path, split: str, episode_length: int) -> MarketSplit:
    """One market's split: its episodes (persons not yet matched across markets) and graph posts."""
    csv_path = Path(market_dir) / f"{split}.csv"
    episodes_path = Path(market_dir) / "episodes" / f"len_{episode_length}.json"
    rows, lines = _read_rows(csv_path)
    market = rows[0]["market"]
    for line, row in zip(lines, rows, strict=True):
        if row["market"] != market:
            raise DataError(
                f"market {row['market']!r} differs from the first row's {market!r}", path=csv_path, line=line
            )
    times = [_parse_date(row["Date"], csv_path, line) for line, row in zip(lines, rows, strict=True)]
    episode_rows = _read_episode_rows(episodes_path, split, len(rows))
    episodes = []
    for author in sorted(episode_rows):
        for number, indices in enumerate(episode_rows[author]):
            posts = tuple(
                EpisodePost(
                    rows[i]["cleaned_post"] or "",
                    times[i].weekday(),
                    rows[i]["subforum"] or "",
                    rows[i].get("thread_id") or "",  # "" where the csv has no thread column
                )
                for i in indices
            )
            episodes.append(
                Episode(
                    id=f"{market}/{split}/{author}/{number}",
                    author=author,
                    market=market,
                    posts=posts,
                    person=f"{market}:{author}",  # account names are not shared identities across markets
                    start=int(times[indices[0]].timestamp()),
                )
            )
    episodes.sort(key=lambda e: (e.start, e.id))  # SYSML orders episodes by their first post
    return MarketSplit(market, episodes, _graph_posts(rows, times, market, split), [csv_path, episodes_path])


def read_matches(path: Path) -> dict[tuple[str, str], str]:
    """(market, account) -> person, from SYSML's matches.csv: matched accounts share one person."""
    path = Path(path)
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(key: tuple[str, str]) -> tuple[str, str]:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    rows, lines = _read_rows(path, ("uid1", "market1", "uid2", "market2", "match"), empty_ok=True)
    for line, row in zip(lines, rows, strict=True):
        first, second = (row["market1"], row["uid1"]), (row["market2"], row["uid2"])
        if _truthy(row["match"], path, line):
            parent[find(first)] = find(second)
    return {key: "{}:{}".format(*find(key)) for key in parent}


def _truthy(value: str, path: Path, line: int) -> bool:
    lowered = value.strip().lower()
    if lowered in ("1", "true", "t", "yes"):
        return True
    if lowered in ("0", "false", "f", "no"):
        return False
    raise DataError(f"expected a boolean, got {value!r}", path=path, line=line, field="match")


def _read_rows(
    path: Path, required: tuple[str, ...] = REQUIRED_COLUMNS, *, empty_ok: bool = False
) -> tuple[list[dict[str, str]], list[int]]:
    """The rows of a SYSML csv and the line each starts on (a post may span lines); a header without a `required`
    column or naming one twice, and a row with fewer or more fields than the header, are DataErrors naming the
    line."""
    if not path.is_file():
        raise DataError("file not found", path=path)
    csv.field_size_limit(1 << 30)  # posts with whole PGP keys exceed the default 128 kB
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")  # a byte order mark (as Excel writes) is not part of the first column's name
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", path=path, line=line) from None
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = list(reader.fieldnames or ())
        twice = sorted({name for name in header if header.count(name) > 1})
        if twice:  # DictReader would keep the last column of the name: another column's values under it
            raise DataError(f"column(s) named twice in the header: {', '.join(twice)}", path=path, line=1)
        missing = set(required) - set(header)
        if missing:
            raise DataError(f"missing column(s) {', '.join(sorted(missing))}", path=path, line=1)
        width = len(header)
        rows, lines = [], []
        start = reader.line_num + 1
        for row in reader:
            fields = width + len(row.get(None) or ()) - sum(value is None for value in row.values())
            if fields != width:  # DictReader fills a short row with None and keeps a long one's rest under None
                raise DataError(f"{fields} field(s) where the header has {width}", path=path, line=start)
            rows.append(row)
            lines.append(start)
            start = reader.line_num + 1
    except csv.Error as exc:
        raise DataError(f"not readable as CSV ({exc})", path=path, line=reader.line_num) from None
    if not rows and not empty_ok:
        raise DataError("no rows", path=path)
    return rows, lines


def _parse_date(value: str, path: Path, line: int) -> datetime:
    """ISO dates and date-times (what pandas writes), or Unix seconds; naive times are UTC."""
    text = (value or "").strip()
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        try:
            parsed = datetime.fromtimestamp(float(text), tz=timezone.utc)
        except (ValueError, OverflowError):
            raise DataError(f"not a date: {value!r}", path=path, line=line, field="Date") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def _read_episode_rows(path: Path, split: str, n_rows: int) -> dict[str, list[list[int]]]:
    if not path.is_file():
        raise DataError("file not found (episodes of this length)", path=path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", path=path) from None
    content = parse_json(text, path)
    if not isinstance(content, dict) or not isinstance(content.get(split), dict):
        raise DataError(f"expected an object with a {split!r} object of authors", path=path)
    episodes: dict[str, list[list[int]]] = {}
    for author, runs in content[split].items():
        if not isinstance(runs, list):
            raise DataError(f"author {author!r}: expected a list of episodes", path=path, field=split)
        kept = []
        for run in runs:
            if not isinstance(run, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in run):
                raise DataError(f"author {author!r}: an episode must be a list of row numbers", path=path, field=split)
            indices = [i for i in run if i != -1]  # -1 pads short episodes
            bad = [i for i in indices if not 0 <= i < n_rows]
            if bad:  # another negative number is no padding: SYSML's `df.iloc` would read a row from the end
                raise DataError(
                    f"author {author!r}: row {bad[0]} is not one of the csv's {n_rows} (0-{n_rows - 1}; -1 pads)",
                    path=path,
                    field=split,
                )
            if indices:
                kept.append(indices)
        if kept:
            episodes[str(author)] = kept
    return episodes


def _graph_posts(rows: list[dict[str, str]], times: list[datetime], market: str, split: str) -> list[ForumPost]:
    if not rows or "author" not in rows[0] or "thread_id" not in rows[0]:
        return []
    infer_kind = "kind" not in rows[0]
    first_of_thread: dict[str, int] = {}  # without a kind column, a thread's earliest post starts it
    if infer_kind:
        for i, (row, when) in enumerate(zip(rows, times, strict=True)):
            known = first_of_thread.get(row["thread_id"])
            if known is None or when < times[known]:
                first_of_thread[row["thread_id"]] = i
    posts = []
    for i, (row, when) in enumerate(zip(rows, times, strict=True)):
        if not row["author"] or not row["thread_id"]:
            continue
        if infer_kind:
            kind = "submission" if first_of_thread[row["thread_id"]] == i else "comment"
        else:
            kind = row["kind"] or "comment"
        posts.append(
            ForumPost(
                post_id=row.get("post_id") or f"{market}/{split}/{i}",
                author=row["author"],
                market=market,
                subforum=row["subforum"] or "",
                thread_id=row["thread_id"],
                parent_id=row.get("parent_id") or None,
                kind=kind,
                created=int(when.timestamp()),
                text="",
            )
        )
    return posts
