/**
 * Builds the bundled sample databases (our own synthetic data, no third-party copies) into
 * data/databases/<db_id>/<db_id>.sqlite, BIRD's layout. Deterministic: a fixed seed per database,
 * so a rebuild gives the same rows (and the gold answers in data/dev.json stay valid).
 *
 *   node --import tsx scripts/build-data.ts [out-root]      (default out-root: data/databases)
 */
import Database from 'better-sqlite3';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../src/util/rng.ts';

type Cell = string | number | null;

const FIRST = ['Ana', 'Ben', 'Chloe', 'Daniel', 'Elena', 'Farid', 'Grace', 'Hiro', 'Ines', 'Jonas', 'Kofi', 'Lena', 'Marco', 'Nadia', 'Oscar', 'Priya', 'Quinn', 'Rosa', 'Sven', 'Tara', 'Umar', 'Vera', 'Wei', 'Yara', 'Zoe', 'Liam', 'Mia', 'Noah', 'Emma', 'Lucas'];
const LAST = ['Silva', 'Brown', 'Martin', 'Novak', 'Garcia', 'Khan', 'Muller', 'Tanaka', 'Rossi', 'Larsen', 'Mensah', 'Dubois', 'Kowalski', 'Patel', 'Nguyen', 'Costa', 'Schmidt', 'Okafor', 'Berg', 'Moreau', 'Lopez', 'Ivanova', 'Chen', 'Haddad', 'Walsh'];
const PLACES: Array<[city: string, state: string | null, country: string]> = [
  ['Lisbon', null, 'Portugal'], ['Porto', null, 'Portugal'], ['Berlin', null, 'Germany'], ['Munich', null, 'Germany'],
  ['Paris', null, 'France'], ['Lyon', null, 'France'], ['Toronto', 'ON', 'Canada'], ['Vancouver', 'BC', 'Canada'],
  ['Austin', 'TX', 'USA'], ['Boston', 'MA', 'USA'], ['Seattle', 'WA', 'USA'], ['Chicago', 'IL', 'USA'],
  ['Sao Paulo', 'SP', 'Brazil'], ['Oslo', null, 'Norway'], ['Prague', null, 'Czech Republic'], ['Madrid', null, 'Spain'],
  ['Tokyo', null, 'Japan'], ['Sydney', 'NSW', 'Australia'], ['Dublin', null, 'Ireland'], ['Delhi', null, 'India'],
];

function pad(n: number, w = 2): string {
  return String(n).padStart(w, '0');
}
/** A date between two years (inclusive) as ISO text; day capped at 28 so every month is valid. */
function isoDate(rng: Rng, fromYear: number, toYear: number): string {
  return `${fromYear + rng.int(toYear - fromYear + 1)}-${pad(1 + rng.int(12))}-${pad(1 + rng.int(28))}`;
}
function addDays(iso: string, days: number): string {
  const d = new Date(`${iso}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}
function money(x: number): number {
  return Math.round(x * 100) / 100;
}
function person(rng: Rng): [string, string] {
  return [rng.pick(FIRST), rng.pick(LAST)];
}
function email(first: string, last: string, id: number, domain: string): string {
  return `${first}.${last}${id}@${domain}`.toLowerCase();
}

function insertAll(db: Database.Database, table: string, rows: Cell[][]): void {
  if (rows.length === 0) return;
  const stmt = db.prepare(`INSERT INTO ${table} VALUES (${rows[0].map(() => '?').join(', ')})`);
  for (const r of rows) stmt.run(...r);
}

// ------------------------------------------------------------------ music_store

function buildMusicStore(db: Database.Database, rng: Rng): void {
  db.exec(`
    CREATE TABLE genres (genre_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE media_types (media_type_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
    CREATE TABLE artists (artist_id INTEGER PRIMARY KEY, name TEXT NOT NULL, country TEXT);
    CREATE TABLE albums (
      album_id INTEGER PRIMARY KEY, title TEXT NOT NULL,
      artist_id INTEGER NOT NULL REFERENCES artists(artist_id), release_year INTEGER);
    CREATE TABLE tracks (
      track_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
      album_id INTEGER NOT NULL REFERENCES albums(album_id),
      genre_id INTEGER REFERENCES genres(genre_id),
      media_type_id INTEGER NOT NULL REFERENCES media_types(media_type_id),
      composer TEXT, milliseconds INTEGER NOT NULL, bytes INTEGER, unit_price REAL NOT NULL);
    CREATE TABLE employees (
      employee_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL, title TEXT,
      reports_to INTEGER REFERENCES employees(employee_id),
      birth_date TEXT, hire_date TEXT, city TEXT, country TEXT, email TEXT);
    CREATE TABLE customers (
      customer_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL, company TEXT,
      city TEXT, state TEXT, country TEXT NOT NULL, email TEXT NOT NULL,
      support_rep_id INTEGER REFERENCES employees(employee_id));
    CREATE TABLE invoices (
      invoice_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
      invoice_date TEXT NOT NULL, billing_city TEXT, billing_country TEXT, total REAL NOT NULL);
    CREATE TABLE invoice_lines (
      invoice_line_id INTEGER PRIMARY KEY, invoice_id INTEGER NOT NULL REFERENCES invoices(invoice_id),
      track_id INTEGER NOT NULL REFERENCES tracks(track_id), unit_price REAL NOT NULL, quantity INTEGER NOT NULL);
  `);
  const genres = ['Rock', 'Jazz', 'Blues', 'Classical', 'Pop', 'Electronic', 'Hip Hop', 'Folk', 'Metal', 'Reggae', 'Latin', 'Soundtrack'];
  insertAll(db, 'genres', genres.map((g, i) => [i + 1, g]));
  const media = ['MPEG audio file', 'AAC audio file', 'FLAC audio file', 'Protected MPEG-4 video file'];
  insertAll(db, 'media_types', media.map((m, i) => [i + 1, m]));

  const band1 = ['The', 'Velvet', 'Silver', 'Midnight', 'Electric', 'Crimson', 'Golden', 'Hollow', 'Northern', 'Paper', 'Iron', 'Quiet'];
  const band2 = ['Foxes', 'Tides', 'Engines', 'Lanterns', 'Orchard', 'Harbor', 'Comets', 'Ravens', 'Satellites', 'Rivers', 'Wolves', 'Echoes'];
  const artistNames = new Set<string>();
  while (artistNames.size < 40) {
    if (rng.next() < 0.3) {
      const [f, l] = person(rng);
      artistNames.add(`${f} ${l}`);
    } else artistNames.add(`${rng.pick(band1)} ${rng.pick(band2)}`);
  }
  const artists = [...artistNames].map((n, i) => [i + 1, n, rng.pick(PLACES)[2]] as Cell[]);
  insertAll(db, 'artists', artists);

  const w1 = ['Blue', 'Broken', 'Distant', 'Endless', 'Falling', 'Wild', 'Secret', 'Summer', 'Winter', 'Neon', 'Lost', 'Burning', 'Slow', 'Open', 'Second'];
  const w2 = ['Skies', 'Roads', 'Hearts', 'Lights', 'Dreams', 'Signals', 'Gardens', 'Waves', 'Stories', 'Mirrors', 'Hours', 'Shadows', 'Letters', 'Fields', 'Stars'];
  const albums: Cell[][] = [];
  for (let id = 1; id <= 90; id++) {
    // Every artist gets at least one album; the rest go to a random artist.
    const artistId = id <= 40 ? id : 1 + rng.int(40);
    albums.push([id, `${rng.pick(w1)} ${rng.pick(w2)}`, artistId, 1970 + rng.int(54)]);
  }
  insertAll(db, 'albums', albums);

  const tracks: Cell[][] = [];
  let trackId = 0;
  for (const album of albums) {
    const albumGenre = 1 + rng.int(genres.length);
    const n = 6 + rng.int(9);
    for (let k = 0; k < n; k++) {
      trackId++;
      const genre = rng.next() < 0.85 ? albumGenre : rng.next() < 0.1 ? null : 1 + rng.int(genres.length);
      const mediaType = rng.next() < 0.6 ? 1 : rng.next() < 0.5 ? 2 : rng.next() < 0.7 ? 3 : 4;
      const [cf, cl] = person(rng);
      const composer = rng.next() < 0.25 ? null : `${cf} ${cl}`;
      const ms = 120000 + rng.int(360000);
      const bytes = Math.round(ms * (mediaType === 3 ? 110 : mediaType === 4 ? 900 : 32) + rng.int(50000));
      const price = mediaType === 4 ? 1.99 : mediaType === 3 ? 1.29 : 0.99;
      tracks.push([trackId, `${rng.pick(w1)} ${rng.pick(w2)}${rng.next() < 0.2 ? ' (Live)' : ''}`, album[0], genre, mediaType, composer, ms, bytes, price]);
    }
  }
  insertAll(db, 'tracks', tracks);

  const employees: Cell[][] = [
    [1, 'Andrew', 'Adams', 'General Manager', null, '1968-02-18', '2015-08-14', 'Lisbon', 'Portugal', 'andrew@musicstore.example'],
    [2, 'Nancy', 'Edwards', 'Sales Manager', 1, '1971-12-08', '2015-09-01', 'Lisbon', 'Portugal', 'nancy@musicstore.example'],
    [3, 'Jane', 'Peacock', 'Sales Support Agent', 2, '1983-08-29', '2016-04-01', 'Porto', 'Portugal', 'jane@musicstore.example'],
    [4, 'Margaret', 'Park', 'Sales Support Agent', 2, '1957-09-19', '2016-05-03', 'Lisbon', 'Portugal', 'margaret@musicstore.example'],
    [5, 'Steve', 'Johnson', 'Sales Support Agent', 2, '1975-03-03', '2017-10-17', 'Berlin', 'Germany', 'steve@musicstore.example'],
    [6, 'Michael', 'Mitchell', 'IT Manager', 1, '1983-07-01', '2017-10-17', 'Lisbon', 'Portugal', 'michael@musicstore.example'],
    [7, 'Robert', 'King', 'IT Staff', 6, '1980-05-29', '2018-01-02', 'Porto', 'Portugal', 'robert@musicstore.example'],
    [8, 'Laura', 'Callahan', 'IT Staff', 6, '1978-01-09', '2018-03-04', 'Lisbon', 'Portugal', 'laura@musicstore.example'],
  ];
  insertAll(db, 'employees', employees);

  const companies = ['Nordic Sound AB', 'Blue Note Cafe', 'Riverside Studios', 'Apex Media', 'Lumen Films'];
  const customers: Cell[][] = [];
  for (let id = 1; id <= 60; id++) {
    const [f, l] = person(rng);
    const [city, state, country] = rng.pick(PLACES);
    customers.push([id, f, l, rng.next() < 0.2 ? rng.pick(companies) : null, city, state, country, email(f, l, id, 'mail.example'), 3 + rng.int(3)]);
  }
  insertAll(db, 'customers', customers);

  const invoices: Cell[][] = [];
  const lines: Cell[][] = [];
  let lineId = 0;
  // Ids follow dates, as in a real ledger.
  const invoiceDates = Array.from({ length: 420 }, () => isoDate(rng, 2020, 2024)).sort();
  for (let id = 1; id <= 420; id++) {
    const cust = customers[rng.int(customers.length)];
    const date = invoiceDates[id - 1];
    const nLines = 1 + rng.int(9);
    let total = 0;
    const used = new Set<number>();
    for (let k = 0; k < nLines; k++) {
      const t = tracks[rng.int(tracks.length)];
      if (used.has(t[0] as number)) continue;
      used.add(t[0] as number);
      const qty = rng.next() < 0.9 ? 1 : 2;
      total += (t[8] as number) * qty;
      lines.push([++lineId, id, t[0], t[8], qty]);
    }
    invoices.push([id, cust[0], date, cust[4], cust[6], money(total)]);
  }
  insertAll(db, 'invoices', invoices);
  insertAll(db, 'invoice_lines', lines);
}

// ------------------------------------------------------------------ retail

function buildRetail(db: Database.Database, rng: Rng): void {
  db.exec(`
    CREATE TABLE categories (category_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, description TEXT);
    CREATE TABLE suppliers (
      supplier_id INTEGER PRIMARY KEY, company_name TEXT NOT NULL, contact_name TEXT,
      city TEXT, country TEXT NOT NULL, phone TEXT);
    CREATE TABLE shippers (shipper_id INTEGER PRIMARY KEY, company_name TEXT NOT NULL, phone TEXT);
    CREATE TABLE products (
      product_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
      category_id INTEGER NOT NULL REFERENCES categories(category_id),
      supplier_id INTEGER REFERENCES suppliers(supplier_id),
      unit_price REAL NOT NULL, units_in_stock INTEGER NOT NULL, discontinued INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE customers (
      customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT, city TEXT,
      country TEXT NOT NULL, signup_date TEXT NOT NULL);
    CREATE TABLE orders (
      order_id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
      order_date TEXT NOT NULL, shipped_date TEXT, shipper_id INTEGER REFERENCES shippers(shipper_id),
      status TEXT NOT NULL);
    CREATE TABLE order_items (
      order_id INTEGER NOT NULL REFERENCES orders(order_id),
      product_id INTEGER NOT NULL REFERENCES products(product_id),
      quantity INTEGER NOT NULL, unit_price REAL NOT NULL, discount REAL NOT NULL DEFAULT 0,
      PRIMARY KEY (order_id, product_id));
  `);
  const cats: Array<[string, string | null, string[], number]> = [
    ['Beverages', 'Coffee, tea, juices and soft drinks', ['Arabica Coffee', 'Green Tea', 'Orange Juice', 'Sparkling Water', 'Cold Brew', 'Chai Latte Mix', 'Lemonade'], 6],
    ['Bakery', 'Breads and pastries', ['Sourdough Loaf', 'Rye Bread', 'Croissant Pack', 'Bagels', 'Cinnamon Rolls', 'Baguette'], 4],
    ['Dairy', 'Milk, cheese and yogurt', ['Whole Milk', 'Greek Yogurt', 'Cheddar', 'Mozzarella', 'Butter', 'Brie', 'Kefir'], 5],
    ['Produce', null, ['Apples', 'Bananas', 'Avocados', 'Tomatoes', 'Spinach', 'Carrots', 'Blueberries', 'Lemons'], 3],
    ['Pantry', 'Dry goods and canned food', ['Olive Oil', 'Basmati Rice', 'Spaghetti', 'Chickpeas', 'Tomato Sauce', 'Honey', 'Oat Flakes', 'Peanut Butter'], 7],
    ['Snacks', 'Chips, nuts and sweets', ['Sea Salt Chips', 'Almonds', 'Dark Chocolate', 'Trail Mix', 'Popcorn', 'Granola Bars'], 4],
    ['Household', 'Cleaning and paper goods', ['Dish Soap', 'Paper Towels', 'Laundry Detergent', 'Trash Bags', 'Sponges'], 8],
    ['Frozen', 'Frozen meals and desserts', ['Frozen Pizza', 'Ice Cream', 'Frozen Peas', 'Fish Fillets', 'Veggie Burgers'], 9],
  ];
  insertAll(db, 'categories', cats.map(([n, d], i) => [i + 1, n, d]));
  const supWords = ['Green Valley', 'Blue Harbor', 'Sunrise', 'Old Mill', 'Northwind', 'Hilltop', 'Riverbend', 'Golden Field', 'Coastal', 'Evergreen'];
  const suppliers: Cell[][] = supWords.map((w, i) => {
    const [f, l] = person(rng);
    const [city, , country] = rng.pick(PLACES);
    return [i + 1, `${w} ${rng.pick(['Foods', 'Trading', 'Farms', 'Supply Co.'])}`, `${f} ${l}`, city, country, rng.next() < 0.25 ? null : `+${10 + rng.int(89)} ${100 + rng.int(900)} ${1000 + rng.int(9000)}`];
  });
  insertAll(db, 'suppliers', suppliers);
  insertAll(db, 'shippers', [
    [1, 'Speedy Express', '+1 503 555 9831'],
    [2, 'United Package', '+1 503 555 3199'],
    [3, 'Federal Freight', null],
    [4, 'Parcel Pigeon', '+44 20 7946 0018'],
  ]);
  const products: Cell[][] = [];
  let pid = 0;
  cats.forEach(([, , names, base], ci) => {
    for (const n of names) {
      for (const size of ['', ' Large']) {
        if (size && rng.next() < 0.5) continue;
        pid++;
        const price = money(base * (0.5 + rng.next() * 1.5) * (size ? 1.8 : 1));
        products.push([pid, n + size, ci + 1, rng.next() < 0.08 ? null : 1 + rng.int(suppliers.length), price, rng.int(200), rng.next() < 0.1 ? 1 : 0]);
      }
    }
  });
  insertAll(db, 'products', products);

  const customers: Cell[][] = [];
  for (let id = 1; id <= 150; id++) {
    const [f, l] = person(rng);
    const [city, , country] = rng.pick(PLACES);
    customers.push([id, `${f} ${l}`, rng.next() < 0.15 ? null : email(f, l, id, 'shop.example'), rng.next() < 0.05 ? null : city, country, isoDate(rng, 2019, 2023)]);
  }
  insertAll(db, 'customers', customers);

  const orders: Cell[][] = [];
  const items: Cell[][] = [];
  const orderDates = Array.from({ length: 700 }, () => isoDate(rng, 2022, 2024)).sort();
  for (let id = 1; id <= 700; id++) {
    const c = customers[rng.int(customers.length)];
    const date = orderDates[id - 1];
    const r = rng.next();
    const status = r < 0.75 ? 'delivered' : r < 0.85 ? 'shipped' : r < 0.93 ? 'pending' : 'cancelled';
    const shipped = status === 'delivered' || status === 'shipped' ? addDays(date, 1 + rng.int(7)) : null;
    const shipper = shipped ? 1 + rng.int(4) : null;
    orders.push([id, c[0], date, shipped, shipper, status]);
    const used = new Set<number>();
    const n = 1 + rng.int(6);
    for (let k = 0; k < n; k++) {
      const p = products[rng.int(products.length)];
      if (used.has(p[0] as number)) continue;
      used.add(p[0] as number);
      const discount = rng.next() < 0.8 ? 0 : rng.pick([0.05, 0.1, 0.15, 0.2]);
      items.push([id, p[0], 1 + rng.int(12), p[4], discount]);
    }
  }
  insertAll(db, 'orders', orders);
  insertAll(db, 'order_items', items);
}

// ------------------------------------------------------------------ school

function buildSchool(db: Database.Database, rng: Rng): void {
  db.exec(`
    CREATE TABLE departments (dept_id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, building TEXT, budget REAL);
    CREATE TABLE instructors (
      instructor_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
      dept_id INTEGER NOT NULL REFERENCES departments(dept_id), hire_date TEXT NOT NULL, salary REAL NOT NULL);
    CREATE TABLE students (
      student_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL, last_name TEXT NOT NULL,
      major_dept_id INTEGER REFERENCES departments(dept_id), enrollment_year INTEGER NOT NULL, birth_date TEXT);
    CREATE TABLE courses (
      course_id TEXT PRIMARY KEY, title TEXT NOT NULL,
      dept_id INTEGER NOT NULL REFERENCES departments(dept_id), credits INTEGER NOT NULL);
    CREATE TABLE sections (
      course_id TEXT NOT NULL REFERENCES courses(course_id), term TEXT NOT NULL,
      instructor_id INTEGER REFERENCES instructors(instructor_id), room TEXT, capacity INTEGER NOT NULL,
      PRIMARY KEY (course_id, term));
    CREATE TABLE enrollments (
      student_id INTEGER NOT NULL REFERENCES students(student_id),
      course_id TEXT NOT NULL, term TEXT NOT NULL, grade REAL,
      PRIMARY KEY (student_id, course_id, term),
      FOREIGN KEY (course_id, term) REFERENCES sections(course_id, term));
  `);
  const depts: Array<[string, string, string, string[]]> = [
    ['Computer Science', 'CS', 'Turing Hall', ['Intro to Programming', 'Data Structures', 'Algorithms', 'Databases', 'Operating Systems', 'Machine Learning']],
    ['Mathematics', 'MATH', 'Noether Hall', ['Calculus I', 'Calculus II', 'Linear Algebra', 'Probability', 'Number Theory']],
    ['Physics', 'PHYS', 'Curie Building', ['Mechanics', 'Electromagnetism', 'Quantum Physics', 'Thermodynamics']],
    ['History', 'HIST', 'Herodotus Hall', ['World History', 'Medieval Europe', 'Modern Asia', 'History of Science']],
    ['Biology', 'BIO', 'Darwin Center', ['Cell Biology', 'Genetics', 'Ecology', 'Microbiology', 'Evolution']],
    ['Economics', 'ECON', 'Smith Hall', ['Microeconomics', 'Macroeconomics', 'Econometrics', 'Game Theory']],
  ];
  insertAll(db, 'departments', depts.map(([n, , b], i) => [i + 1, n, b, money(300000 + rng.int(900) * 1000)]));
  const instructors: Cell[][] = [];
  for (let id = 1; id <= 24; id++) {
    const [f, l] = person(rng);
    instructors.push([id, f, l, ((id - 1) % depts.length) + 1, isoDate(rng, 2000, 2022), money(55000 + rng.int(70) * 1000)]);
  }
  insertAll(db, 'instructors', instructors);
  const students: Cell[][] = [];
  for (let id = 1; id <= 240; id++) {
    const [f, l] = person(rng);
    const year = 2019 + rng.int(5);
    students.push([id, f, l, rng.next() < 0.1 ? null : 1 + rng.int(depts.length), year, isoDate(rng, year - 19, year - 18)]);
  }
  insertAll(db, 'students', students);
  const courses: Cell[][] = [];
  depts.forEach(([, code, , titles], di) => {
    titles.forEach((t, k) => courses.push([`${code}${100 + k * 100 + 1 + rng.int(9)}`, t, di + 1, rng.pick([3, 3, 4, 4, 5, 6])]));
  });
  insertAll(db, 'courses', courses);
  const terms = ['2022-FA', '2023-SP', '2023-FA', '2024-SP'];
  const sections: Cell[][] = [];
  for (const c of courses) {
    for (const term of terms) {
      if (rng.next() < 0.3) continue;
      const deptInstructors = instructors.filter((i) => i[3] === c[2]);
      const instructor = rng.next() < 0.05 ? null : rng.pick(deptInstructors)[0];
      sections.push([c[0], term, instructor, `${String(c[0]).replace(/\d+/, '')}-${100 + rng.int(300)}`, rng.pick([20, 30, 40, 60])]);
    }
  }
  insertAll(db, 'sections', sections);
  const enrollments: Cell[][] = [];
  for (const s of students) {
    const n = 3 + rng.int(6);
    const used = new Set<string>();
    for (let k = 0; k < n; k++) {
      const sec = rng.pick(sections);
      const key = `${sec[0]}|${sec[1]}`;
      if (used.has(key)) continue;
      used.add(key);
      // The latest term is still running: no grade yet.
      const grade = sec[1] === '2024-SP' && rng.next() < 0.7 ? null : Math.round(Math.min(4, Math.max(0, 2.9 + rng.normal() * 0.7)) * 10) / 10;
      enrollments.push([s[0], sec[0], sec[1], grade]);
    }
  }
  insertAll(db, 'enrollments', enrollments);
}

const BUILDERS: Record<string, [seed: number, build: (db: Database.Database, rng: Rng) => void]> = {
  music_store: [20240101, buildMusicStore],
  retail: [20240202, buildRetail],
  school: [20240303, buildSchool],
};

export function buildAll(outRoot: string): string[] {
  const written: string[] = [];
  for (const [dbId, [seed, build]] of Object.entries(BUILDERS)) {
    const dir = join(outRoot, dbId);
    mkdirSync(dir, { recursive: true });
    const target = join(dir, `${dbId}.sqlite`);
    const tmp = `${target}.tmp`;
    rmSync(tmp, { force: true });
    const db = new Database(tmp);
    db.pragma('foreign_keys = ON');
    db.transaction(() => build(db, new Rng(seed)))();
    const violations = db.pragma('foreign_key_check') as unknown[];
    if (violations.length > 0) throw new Error(`${dbId}: ${violations.length} foreign key violations`);
    db.exec('VACUUM');
    db.close();
    renameSync(tmp, target);
    written.push(target);
  }
  return written;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const p of buildAll(process.argv[2] ?? join('data', 'databases'))) console.log(`wrote ${p}`);
}
