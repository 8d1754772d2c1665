// A boardgame.io server for bench/peers/service.py: the dominoes of game.mjs,
// in-memory storage (its default), socket.io transport (its default), the
// lobby API on the same port.
//
//   NODE_ENV=production node server.mjs --port P
//
// Besides the lobby API it answers GET /bench/moves with the moves it applied
// so far (a move function that did not answer INVALID_MOVE), which the bench
// reads at both ends of its measurement window. Prints "listening" when up.
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { Dominoes } from './game.mjs';

const require = createRequire(import.meta.url);
const { Server, Origins } = require('boardgame.io/server');
const { INVALID_MOVE } = require('boardgame.io/core');

const { values: args } = parseArgs({ options: { port: { type: 'string', default: '8000' } } });

let applied = 0;
const counted = {};
for (const [name, { move, ...options }] of Object.entries(Dominoes.moves)) {
  counted[name] = {
    ...options,
    move: (...moveArgs) => {
      const result = move(...moveArgs);
      if (result !== INVALID_MOVE) applied += 1;
      return result;
    },
  };
}

const server = Server({ games: [{ ...Dominoes, moves: counted }], origins: [Origins.LOCALHOST] });
server.router.get('/bench/moves', (ctx) => {
  ctx.body = { moves: applied };
});
await server.run({ port: Number(args.port), callback: () => console.log('listening') });
