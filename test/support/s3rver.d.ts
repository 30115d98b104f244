/** The little of s3rver (a local S3 server) the tests use. */
declare module "s3rver" {
  export default class S3rver {
    constructor(options: {
      port?: number
      address?: string
      silent?: boolean
      directory: string
      configureBuckets?: ReadonlyArray<{ name: string; configs: ReadonlyArray<unknown> }>
    })
    run(): Promise<{ address: string; port: number }>
    close(): Promise<void>
  }
}
