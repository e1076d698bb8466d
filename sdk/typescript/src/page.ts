/** One page of a listing: its items and the cursor of the next page ("" on the last). */
export interface Page<T> {
  items: T[];
  next: string;
}

/**
 * Walks every page that fetchPage returns, from cursor on, yielding each
 * item. It asks for the next page only when the loop gets there, so a
 * `break` stops asking. A page may be short, even empty, and still have a
 * next cursor (a label search looks at a bounded number of rows): the walk
 * goes on until the cursor is empty.
 */
export async function* paginate<T>(cursor: string | undefined, fetchPage: (cursor: string | undefined) => Promise<Page<T>>): AsyncGenerator<T, void, undefined> {
  for (;;) {
    const page = await fetchPage(cursor);
    yield* page.items;
    if (page.next === "" || page.next === cursor) return;
    cursor = page.next;
  }
}
