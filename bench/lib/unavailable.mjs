/** Thrown by a peer that cannot run a configuration or shape; the table shows n/a + reason. */
export class Unavailable extends Error {
  constructor(reason) {
    super(reason);
    this.name = 'Unavailable';
  }
}
