// Where a text's dense vector comes from: the app's word vectors (engine/word-vectors.ts), or a
// table of a model server's embeddings of the training texts (a router of server embeddings is
// then given each message's embedding). `id` names the vectors: a router is only ever scored with
// the vectors it was trained on.

/**
 * What gives a text its dense vector: the process's word vectors (word-vectors.ts), or a table of
 * a model server's embeddings of the training texts (tableEmbedder). `id` names the vectors: a
 * router is only ever scored with the vectors it was trained on.
 */
export interface Embedder {
  readonly id: string;
  readonly dims: number;
  /** Writes the text's unit vector into `out` (zeros when nothing of it is known); answers how much was known. */
  embed(text: string, out: Float32Array): number;
}

/** The id prefix of embeddings from a model server (`embeddings:<model>`): a message's vector comes with it to score(). */
export const SERVER_EMBEDDINGS = 'embeddings:';

/**
 * A model server's embeddings of the training texts, each L2-normalised (`data` holds them one
 * after another, in the order of `texts`). A text not in the table has no vector.
 */
export function tableEmbedder(id: string, dims: number, texts: string[], data: Float32Array): Embedder {
  const at = new Map<string, number>();
  texts.forEach((t, i) => at.set(t, i));
  return {
    id,
    dims,
    embed(text, out) {
      const i = at.get(text);
      if (i === undefined) {
        out.fill(0);
        return 0;
      }
      out.set(data.subarray(i * dims, (i + 1) * dims));
      return 1;
    },
  };
}

/** A model server's embeddings of the texts a router is trained on (tableEmbedder's arguments). */
export interface DenseTable {
  id: string;
  dims: number;
  texts: string[];
  data: Float32Array;
}

/** The embedder a training uses: the app's word vectors `words` (true), a server's table, or none. */
export function embedderFor(vectors: boolean | DenseTable, words: Embedder | null): Embedder | null {
  if (vectors === true) return words;
  return vectors ? tableEmbedder(vectors.id, vectors.dims, vectors.texts, vectors.data) : null;
}

/** A router of server embeddings, loaded: each message's vector is given to score(). */
export function givenEmbedder(id: string, dims: number): Embedder {
  return {
    id,
    dims,
    embed() {
      throw new RouterVectorsError(`this router needs the message's embedding from ${id}`);
    },
  };
}

/** Thrown when a stored router needs word vectors this process does not have. */
export class RouterVectorsError extends Error {}
