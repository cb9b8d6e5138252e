const Redis = require("ioredis");
const redis = new Redis(process.env.QUEUE_URL);
setInterval(async () => console.log(await redis.llen("jobs")), 5000);
