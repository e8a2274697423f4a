/** A small music database built fresh in os.tmpdir() for the search tests (never the bundled ones). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';

/**
 * genres 1 Rock, 2 Jazz; artists 1 Nadia Okafor (Nigeria), 2 Blue Harbor (Canada), 3 Al Green (USA),
 * 4 Nadia Okafor (Kenya: a second artist with the same name, so chains through that name are ambiguous);
 * albums 1 Night Drive (artist 1, 2001), 2 Harbor Lights (artist 2, 1999), 3 Quiet Fields (artist 3, 2010),
 * 4 Red Clay (artist 4, 2015); tracks 1 Signal Fire (album 1, Rock), 2 Slow River (album 2, Jazz),
 * 3 Intro (album 1, Rock), 4 Intro (album 2, Jazz: duplicate title), 5 Last Light (album 3, no genre).
 */
export function buildMusicDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'agro-search-'));
  const path = join(dir, 'tiny_music.sqlite');
  const db = new Database(path);
  db.exec(`
    CREATE TABLE genres (genre_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
    CREATE TABLE albums (album_id INTEGER PRIMARY KEY, title TEXT NOT NULL,
      artist_id INTEGER NOT NULL REFERENCES artists(artist_id), release_year INTEGER);
    CREATE TABLE tracks (track_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
      album_id INTEGER NOT NULL REFERENCES albums(album_id), genre_id INTEGER REFERENCES genres(genre_id));
    INSERT INTO genres VALUES (1, 'Rock'), (2, 'Jazz');
    INSERT INTO artists VALUES (1, 'Nadia Okafor', 'Nigeria'), (2, 'Blue Harbor', 'Canada'), (3, 'Al Green', 'USA'),
      (4, 'Nadia Okafor', 'Kenya');
    INSERT INTO albums VALUES (1, 'Night Drive', 1, 2001), (2, 'Harbor Lights', 2, 1999), (3, 'Quiet Fields', 3, 2010),
      (4, 'Red Clay', 4, 2015);
    INSERT INTO tracks VALUES (1, 'Signal Fire', 1, 1), (2, 'Slow River', 2, 2), (3, 'Intro', 1, 1), (4, 'Intro', 2, 2),
      (5, 'Last Light', 3, NULL);
  `);
  db.close();
  return path;
}
